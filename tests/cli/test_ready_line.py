"""The ``ready`` line names the addresses the node is bound to, not the configured ones."""

from __future__ import annotations

import socket
from pathlib import Path

from .node_procs import NodeProc, write_config


def test_the_ready_line_shows_the_bound_raft_port(tmp_path: Path) -> None:
    config = write_config(tmp_path / "node1.toml", 1, {1: "tcp://127.0.0.1:0"})
    node = NodeProc(config)
    try:
        node.wait_ready()
        line = next(s for s in node.seen if s.startswith("ready "))
        raft = dict(p.split("=", 1) for p in line.split()[1:])["raft"]
        host, port = raft.removeprefix("tcp://").rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) != 0, line
        with socket.create_connection((host, int(port)), timeout=10):
            pass  # the node listens there
    finally:
        assert node.terminate() == 0
