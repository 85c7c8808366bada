"""The ``ready`` line names the addresses the node is bound to and, where the configuration
named a host, that name too (what the other members dial)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from lazily_queue.address_places import with_configured_name

from .node_procs import NodeProc, ready_fields, write_config


def test_the_ready_line_shows_the_bound_raft_port(tmp_path: Path) -> None:
    config = write_config(tmp_path / "node1.toml", 1, {1: "tcp://127.0.0.1:0"})
    node = NodeProc(config)
    try:
        node.wait_ready()
        line = next(s for s in node.seen if s.startswith("ready "))
        raft = ready_fields(line)["raft"]
        host, port = raft.removeprefix("tcp://").rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) != 0, line
        with socket.create_connection((host, int(port)), timeout=10):
            pass  # the node listens there
    finally:
        assert node.terminate() == 0


def test_the_ready_line_shows_a_configured_host_name_beside_the_bound_address(
        tmp_path: Path) -> None:
    config = write_config(tmp_path / "node1.toml", 1, {1: "tcp://localhost:0"},
                          http="localhost:0")
    node = NodeProc(config)
    try:
        url = node.wait_ready()
        line = next(s for s in node.seen if s.startswith("ready "))
        loopback = r"(127\.0\.0\.1|\[::1\])"
        raft = re.search(rf" raft=tcp://localhost:(\d+) \(bound {loopback}:(\d+)\) ", line)
        assert raft is not None and raft[1] == raft[3] != "0", line
        assert ready_fields(line)["raft"] == f"tcp://localhost:{raft[1]}"
        with socket.create_connection((raft[2].strip("[]"), int(raft[1])), timeout=10):
            pass  # the node listens there
        http = re.search(rf" http=http://localhost:(\d+) \(bound {loopback}:(\d+)\) ", line)
        assert http is not None and http[1] == http[3] != "0", line
        assert url == f"http://localhost:{http[1]}"
    finally:
        assert node.terminate() == 0


@pytest.mark.parametrize(("configured", "bound", "shown"), [
    ("tcp://node-a:7001", "tcp://10.0.0.5:7001", "tcp://node-a:7001 (bound 10.0.0.5:7001)"),
    ("ws://node-a:0/raft", "ws://[::1]:4242/raft", "ws://node-a:4242/raft (bound [::1]:4242)"),
    ("tcp://10.0.0.5:7001", "tcp://10.0.0.5:7001", "tcp://10.0.0.5:7001"),  # no name
    ("tcp://0.0.0.0:7001", "tcp://0.0.0.0:7001", "tcp://0.0.0.0:7001"),
    ("unix:n1.sock", "unix:n1.sock", "unix:n1.sock"),
    ("memory://a", "memory://a", "memory://a"),
])
def test_an_address_shows_its_configured_host_name(configured: str, bound: str,
                                                   shown: str) -> None:
    assert with_configured_name(configured, bound) == shown
