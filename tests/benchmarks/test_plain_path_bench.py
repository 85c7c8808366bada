"""The plain-path benchmark script runs and ends with one JSON line of figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "plain_path.py"


def test_json_is_the_last_line() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1", "--json"],
                          capture_output=True, text=True, timeout=300, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(figures) == {"local_pair_ns", "replicated_apply_ns", "topic_pair_ns",
                            "topic_await_ns", "replicated_topic_ns", "work_cycle_ns",
                            "work_await_push_ns", "work_apply_ns"}
    assert all(value > 0 for value in figures.values())
