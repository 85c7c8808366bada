"""The latency breakdown script runs and ends with one JSON line of figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "latency_breakdown.py"
STAGES = ["to_step", "to_fsync", "fsync", "to_completion", "to_step_end", "to_resume"]


def test_json_is_the_last_line_with_every_stage(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--samples", "50", "--monitor", "--dir", str(tmp_path),
         "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["samples"] == 50 and figures["monitor"] is True
    assert figures["p50_us"] > 0 and figures["software_cpu_us_per_push"] > 0
    if figures["inline_samples"]:  # a slow disk sends every fsync to the worker thread
        assert all(figures[f"{name}_us"] is not None for name in STAGES)
    assert any(line.strip().startswith("fsync ") for line in lines)
    assert list(tmp_path.iterdir()) == []  # the data directory is gone


def test_bad_arguments_get_a_one_line_error() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--samples", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--samples must be at least 1" in done.stderr
