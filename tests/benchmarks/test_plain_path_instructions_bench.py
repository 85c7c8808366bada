"""``benchmarks/plain_path_instructions.py``: its workload run marks one dump per timed
region, and under callgrind against the tree itself every figure's ratio is about 1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "plain_path_instructions.py"
FIGURES = ("local_pair", "replicated_apply", "topic_pair", "topic_await",
           "replicated_topic", "work_cycle", "work_await_push", "work_apply")


def test_each_timed_region_ends_at_its_own_marker() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--child", "--scale", "1"],
                          capture_output=True, text=True, timeout=280, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["lazily_queue"]).resolve().is_relative_to(ROOT)
    dumps = [n for name in FIGURES for n in report["figures"][name]["dumps"]]
    # two markers per run (start, end of its timed region): a warm-up run, then the two
    # measured ones of each figure
    assert dumps == [6 * f + end for f in range(len(FIGURES)) for end in (4, 6)]
    for name in FIGURES:
        small, large = report["figures"][name]["units"]
        assert large == 2 * small > 0


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.timeout(300)
def test_the_tree_against_itself_costs_the_same() -> None:
    measured = ("local_pair", "replicated_apply")  # two figures: callgrind is slow
    done = subprocess.run([sys.executable, str(SCRIPT), "--base", "HEAD", "--scale", "1",
                           "--only", ",".join(measured), "--json"], capture_output=True,
                          text=True, timeout=280, cwd=ROOT, check=True)
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(rows) == set(measured)
    for name, row in rows.items():
        assert row["base"] > 0 and abs(row["ratio"] - 1) < 0.02, (name, row)


def test_an_unknown_figure_is_refused_with_the_known_ones() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--only", "local_pair,nope"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "--only takes figures among local_pair," in done.stderr and "not nope" in done.stderr
