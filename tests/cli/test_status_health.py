"""`lazily-queue status` (the tables) says why a node's health is not ok."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from lazily_queue.cli.status_view import render

from .node_procs import CLI, NodeProc, unix_peers, wait_for, write_config


def test_status_lists_the_health_reasons_of_a_degraded_node(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    procs = [NodeProc(write_config(tmp_path / f"n{i}.toml", i, peers)) for i in (1, 2, 3)]
    try:
        urls = [p.wait_ready() for p in procs]
        for p in procs:
            p.wait_line("leader ")
        procs[2].terminate()
        wait_for(lambda: procs[0].status()["health"]["level"] == "critical",
                 what="node 1 sees member 3 gone")
        out = subprocess.run([*CLI, "status", "--url", urls[0]], capture_output=True,
                             text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert "health: critical" in out.stdout
        assert "member(s) 3 unreachable" in out.stdout
    finally:
        for p in procs:
            p.terminate()


def _status(**health: Any) -> dict[str, Any]:
    return {
        "node": "1", "cluster": "c", "state": "leader", "leader": "1", "term": 2,
        "commit_index": 5, "last_applied": 5, "has_quorum": True, "durability": "fsync",
        "disk": {"writable": False, "error": "disk full"},
        "members": [
            {"id": "1", "self": True, "role": "leader", "connected": True,
             "match_index": 5, "lag": 0, "link_problem": None},
            {"id": "2", "self": False, "role": "unreachable", "connected": False,
             "match_index": None, "lag": None, "link_problem": "refused: wrong secret"},
        ],
        "work_queues": {}, "queues": {}, "topics": {}, "health": health,
    }


def _rows(status: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(str(t.title), [str(c) for c in t.columns[0].cells]) for t in render(status)]


def test_the_health_table_has_one_row_per_reason_not_repeating_the_link_column() -> None:
    reasons = ["member(s) 2 unreachable", "member 2: refused: wrong secret",
               "journal not writable: disk full"]
    tables = _rows(_status(level="critical", reasons=reasons))
    assert tables[1] == ("health: critical",
                         ["member(s) 2 unreachable", "journal not writable: disk full"])
    assert tables[2][0] == "members"
    assert all(not title.startswith("health") for title, _ in
               _rows(_status(level="ok", reasons=[])))
    assert all(not title.startswith("health") for title, _ in _rows(_status()))


def test_the_removed_reason_reads_any_json_without_failing() -> None:
    """A status read over HTTP may hold fields of other shapes: each is left out."""
    from lazily_queue.health import removed_reason

    fix = "stop it, or add it again with `lazily-queue members add 4 ADDRESS` on a member"
    assert removed_reason({"refused_by": ["1", "2"], "since": 0.0, "fix": fix}) == (
        "this node was removed from the cluster: member(s) 1, 2 refuse it as not a member "
        f"since 1970-01-01 00:00:00 UTC: {fix}")
    for odd in ({}, {"since": 1e300, "refused_by": "1"}, {"since": "x", "fix": 5},
                {"since": float("nan"), "refused_by": None}):
        assert removed_reason(odd) == ("this node was removed from the cluster: member(s) "
                                       "the others refuse it as not a member"), odd
