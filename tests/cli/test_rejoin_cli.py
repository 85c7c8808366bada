"""``lazily-queue rejoin``: recovering a node whose journal is damaged."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from lazily_queue.cli import main
from lazily_queue.node import Node
from lazily_queue.raft.meta import decode_meta
from lazily_queue.raft.network import LocalHub
from lazily_queue.raft.records import HEADER

from .node_procs import unix_peers, write_config


async def _node_with_history(tmp_path: Path) -> Path:
    data = tmp_path / "data1"
    node = Node(1, data_dir=data, network=LocalHub().network("1"), cluster="test",
                durability="none")
    await node.start()
    await node.wait_for_leader()
    for i in range(5):
        await node.queue("q").push(i)
    await node.stop()
    return data / "raft"


async def _node_and_config(tmp_path: Path) -> tuple[Path, Path]:
    """The raft directory of a stopped node with history, and its configuration file."""
    raft = await _node_with_history(tmp_path)
    return raft, write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                              data_dir=str(tmp_path / "data1"))


def _damage_middle_record(journal: Path) -> None:
    data = bytearray(journal.read_bytes())
    data[HEADER.size + 2] ^= 0x40  # inside the first record; valid records follow it
    journal.write_bytes(bytes(data))


async def test_rejoin_wipes_a_damaged_journal_and_keeps_term_and_vote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raft, config = await _node_and_config(tmp_path)
    assert main(["rejoin", "--config", str(config)]) == 2
    assert "passes its checks" in capsys.readouterr().err
    term = decode_meta((raft / "journal.meta").read_bytes())[0]["term"]
    _damage_middle_record(raft / "journal.log")
    assert main(["rejoin", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "damaged journal" in out and "will not vote until its log reaches" in out
    assert not (raft / "journal.log").exists()
    meta = decode_meta((raft / "journal.meta").read_bytes())[0]
    assert meta["term"] == term and meta["node"] == "1" and meta["rejoin_floor"][1] >= 5


async def test_rejoin_refuses_a_running_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _node_with_history(tmp_path)
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(tmp_path / "data1"))
    fd = os.open(tmp_path / "data1" / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert main(["rejoin", "--config", str(config), "--force"]) == 2
        assert "is running" in capsys.readouterr().err
    finally:
        os.close(fd)
    assert main(["rejoin", "--config", str(config), "--force"]) == 0


async def test_rejoin_says_when_the_term_and_vote_are_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raft, config = await _node_and_config(tmp_path)
    copies = sorted(raft.glob("journal.meta*"))
    assert len(copies) == 2
    for copy in copies:
        data = bytearray(copy.read_bytes())
        data[-1] ^= 0xFF
        copy.write_bytes(bytes(data))
    assert main(["rejoin", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "term and vote were unreadable and are lost" in out, out
    assert "kept" not in out and "once the other members have a leader" in out
    assert decode_meta((raft / "journal.meta").read_bytes())[0]["rejoin_floor"][1] >= 5
