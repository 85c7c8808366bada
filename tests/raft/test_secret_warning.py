"""A member linking over a network with a short cluster secret says so once at start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lazily_queue.node import Node
from lazily_queue.node_network import SHORT_SECRET, weak_secret

WARNING = "nothing limits how many"


def test_short_secrets_on_network_addresses_are_weak() -> None:
    assert weak_secret(b"dev", ["tcp://127.0.0.1:7001"])
    assert weak_secret(b"dev", ["unix:///run/q1.sock", "wss://q2.example:443/raft"])
    assert not weak_secret(b"dev", ["unix:///run/q1.sock", "unix:///run/q2.sock"])
    assert not weak_secret(b"x" * SHORT_SECRET, ["tcp://127.0.0.1:7001"])
    assert not weak_secret(None, ["tcp://127.0.0.1:7001"])
    assert not weak_secret(b"dev", ["no scheme here"])


@pytest.mark.parametrize(("listen", "secret", "warned"), [
    ("tcp://127.0.0.1:0", "dev", True),
    ("tcp://127.0.0.1:0", "a-secret-of-32-characters-or-so!", False),
    ("unix", "dev", False),
])
async def test_a_member_warns_once_about_a_short_secret_on_a_network(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, listen: str, secret: str, warned: bool,
) -> None:
    address = f"unix://{tmp_path}/n1.sock" if listen == "unix" else listen
    caplog.set_level(logging.WARNING, logger="lazily_queue.node_network")
    async with Node(1, data_dir=None, durability="none", listen=address, secret=secret):
        pass
    lines = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert len(lines) == (1 if warned else 0), lines
    if warned:
        assert "node 1: the cluster secret has 3 bytes" in lines[0]
        assert "openssl rand -hex 32" in lines[0]
