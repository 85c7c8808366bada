"""``benchmarks/memory.py`` runs end to end through ``lazily-queue bench memory`` and ends
with one JSON line holding fresh, start, end and peak figures per node (a tiny count:
the shape and realness of the figures, never their values)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_small_run_reports_every_node() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lazily_queue", "bench", "memory", "--count", "300",
         "--warmup", "300", "--settle", "2", "--every", "1", "--json"],
        capture_output=True, text=True, timeout=280, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["count"] == 300 and figures["warmup"] == 300
    assert set(figures["nodes"]) == {"1", "2", "3"}
    for node in figures["nodes"].values():
        for key in ("rss_kb", "data_bytes"):
            assert 0 < node[f"{key}_fresh"]
            assert 0 < node[f"{key}_start"] <= node[f"{key}_peak"]
            assert 0 < node[f"{key}_end"] <= node[f"{key}_peak"]
        # Real figures of three processes, not one read three times or this process's.
        assert 10_000 < node["rss_kb_start"] < 2_000_000
        assert node["rss_ratio"] == pytest.approx(node["rss_kb_end"] / node["rss_kb_start"],
                                                  abs=1e-3)
        assert node["data_ratio"] == pytest.approx(
            node["data_bytes_end"] / node["data_bytes_start"], abs=1e-3)
        assert 0 < node["rss_kb_warmup_peak"] and node["rss_kb_trimmed"] >= 0
        assert node["internals_end"]["receipts"] > 0  # the work queue's settlements
    assert figures["met"] == (max(figures["max_rss_ratio"], figures["max_data_ratio"]) <= 1.1)
    assert any(line.startswith("target end/start <= 1.10:") for line in lines)
    assert any(line.startswith("RSS MiB") for line in lines)


def test_bad_arguments_get_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "busy").write_text("x")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "memory.py"), "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "must be a new or empty directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_journal_preallocating_while_it_is_measured_counts_its_records(
    tmp_path: Path,
) -> None:
    """The size read first bounds the zeros discounted: a journal that grew (more zeros
    preallocated) between the stat and the read is never counted below its records."""
    from benchmarks.memory_probe import _zero_tail

    journal = tmp_path / "journal.log"
    journal.write_bytes(b"r" * 300 + b"\0" * 100)
    size = journal.stat().st_size
    with journal.open("ab") as f:  # preallocated further after the stat
        f.write(b"\0" * 4096)
    assert _zero_tail(str(journal), size) == 100
