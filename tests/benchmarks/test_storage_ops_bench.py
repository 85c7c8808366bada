"""The storage-ops benchmark script runs and ends with one JSON line of figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "storage_ops.py"


def test_json_is_the_last_line() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--ops", "1000", "--repeat", "1",
                           "--json"], capture_output=True, text=True, timeout=120, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(figures) == {"offer_poll", "publish"}
    assert all(value > 0 for value in figures.values())
