"""A flood of hostile strangers against a member process: bounded memory, commits go on.

Runs ``benchmarks/hostile_peers.py``: three ``lazily-queue node`` processes over TCP,
node 1 pushing continuously while this process floods node 1's Raft port with
connections announcing 16 MiB frames (and sending 15 MiB of them), silent ones, garbage
and fast open/close churn, from one source and from 32 others.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "hostile_peers.py"
#: Node 1's resident memory may grow at most this much during the flood.
RSS_BOUND_MIB = 64


@pytest.mark.slow
def test_a_flood_of_strangers_costs_a_member_little_and_commits_go_on() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"],
        capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["node1_alive"]
    assert figures["during_flood"]["commits"] >= 20, figures  # pushes committed meanwhile
    assert figures["flood_connection_attempts"]["big"] > 0
    assert figures["refused_connections"] > 0  # the caps were reached, and counted
    before = figures["rss_before_mib"]
    assert figures["rss_peak_during_mib"] <= before + RSS_BOUND_MIB, figures
    assert figures["rss_hwm_mib"] <= before + RSS_BOUND_MIB, figures
