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
