"""The local benchmark script runs and ends with one JSON line of figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "local_queue.py"


def test_json_is_the_last_line() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--pairs", "1280", "--repeat", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["pairs"] == 1280 and figures["repeat"] == 1
    for key in ("asyncio_queue", "queuecell", "queuecell_bounded", "queuecell_observed"):
        assert figures[key]["ns_per_pair_median"] > 0
        assert figures[key]["pairs_per_second"] > 0
    expected = figures["queuecell"]["ns_per_pair_median"] / figures["asyncio_queue"][
        "ns_per_pair_median"
    ]
    assert abs(figures["ratio"] - expected) < 0.01
    assert figures["target_ratio"] == 1.0
    assert figures["meets_target"] is (figures["ratio"] <= 1.0)
    assert any(line.startswith("ratio QueueCell/asyncio.Queue:") for line in lines)
