"""``benchmarks/raft_queue.py``'s stock PySyncObj comparison runs beside ``lazily_queue``
(whose process-wide patches keep stock PySyncObj from linking in its own process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
import json
import lazily_queue.raft.engine  # the patches installed, as raft_queue.py has them
from benchmarks.raft_queue import stock
print(json.dumps(stock(40)))
"""


def test_stock_pysyncobj_is_measured_from_a_process_holding_the_patches() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["inflight_1"]["pushes"] == 20 and figures["inflight_256"]["pushes"] == 40
    assert figures["inflight_256"]["pushes_per_s"] > 0
