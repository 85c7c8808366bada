"""``benchmarks/transactions.py`` runs tiny, prints a row per backend and ends with one
JSON line of figures (timings are not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "transactions.py"
ROWS = ("local cells", "node (1 member)", "cluster (3 members)")


def test_every_row_is_printed_with_its_ratio() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--cycles", "20", "--rounds", "1",
                           "--json"], capture_output=True, text=True, timeout=280, cwd=ROOT,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert set(figures["rows"]) == set(ROWS)
    for name in ROWS:
        row = figures["rows"][name]
        assert row["separate_us"] > 0 and row["transaction_us"] > 0
        # the ratio of the unrounded figures (those printed are rounded to 0.1 us)
        assert abs(row["ratio"] / (row["transaction_us"] / row["separate_us"]) - 1) < 0.05
        assert any(line.startswith(f"| {name} |") for line in lines), name
