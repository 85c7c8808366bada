"""``benchmarks/latency_instructions.py``: its workload counts loop turns per push on
the tree it is run from (the callgrind run itself is the benchmark's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "latency_instructions.py"


def test_one_member_pushes_count_their_loop_turns() -> None:
    path = os.pathsep.join([str(ROOT), str(ROOT / "transports")])
    done = subprocess.run([sys.executable, str(SCRIPT), "--child", "one_member",
                           "--pushes", "20"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["lazily_queue"]).resolve().is_relative_to(ROOT)
    # a loop of pushes lets the loop run (at least every calls.YIELD_EVERY seconds)
    assert report["turns"] > 0
    assert report["callbacks"] > 0


def test_a_bad_push_count_is_refused() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--pushes", "0"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 2
    assert "--pushes must be at least 1" in done.stderr
