"""The simulator's first seeds, run once per test session and shared by the tests (and
the pytest-xdist workers) that read what the workload did in them."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The first seeds, whose workload counters several tests read.
FIRST = 12


def run_simulator(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m simulator ARGS`` in a child started with ``PYTHONHASHSEED=0`` (the
    simulation is only deterministic with fixed string hashing)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


def passed(proc: subprocess.CompletedProcess[str]) -> str:
    """The run's output; fails the test with it when the run failed."""
    assert proc.returncode == 0, f"simulator failed:\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    return proc.stdout


@pytest.fixture(scope="session")
def first_seeds(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The output of the first :data:`FIRST` seeds: run by the first worker that asks,
    read by the others from the session's shared temporary directory."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / f"sim-first-{FIRST}-seeds.txt"
    with (shared / "sim-first-seeds.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cache.exists():
            out = passed(run_simulator("--seeds", str(FIRST), "--start", "0", "--jobs", "2",
                                       timeout=900))
            cache.write_text(out)
        return cache.read_text()
