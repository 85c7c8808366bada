"""``lazily-queue rejoin``: recovering a node whose journal is damaged."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from lazily_queue.cli import main
from lazily_queue.datadir import DataDirectoryLocked, DirectoryLock
from lazily_queue.node import Node
from lazily_queue.raft import rejoin
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.meta import decode_meta
from lazily_queue.raft.network import LocalHub
from lazily_queue.raft.records import HEADER
from lazily_queue.raft.snapshot import SnapshotError

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


async def test_rejoin_refuses_a_node_that_lists_no_other_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raft = await _node_with_history(tmp_path)
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path, (1,)), cluster="test",
                          data_dir=str(tmp_path / "data1"))
    _damage_middle_record(raft / "journal.log")
    before = (raft / "journal.log").read_bytes()
    assert main(["rejoin", "--config", str(config), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lists no other member in [peers]" in err
    assert "A cluster of one cannot rejoin" in err
    assert (raft / "journal.log").read_bytes() == before  # nothing was wiped


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


async def test_rejoin_recovers_a_damaged_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The node refuses a damaged snapshot and names rejoin: rejoin must then act."""
    raft = await _node_with_history(tmp_path)
    (raft / "snapshot.cbor").write_bytes(b"LQS\x01\x00\x00\x00\x00garbage")
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(tmp_path / "data1"))
    node = Node(1, data_dir=tmp_path / "data1", network=LocalHub().network("1"),
                cluster="test", durability="none")
    with pytest.raises(SnapshotError, match="lazily-queue rejoin"):
        await node.start()
    assert main(["rejoin", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "damaged snapshot" in out and "will not vote until its log reaches" in out, out
    assert not (raft / "snapshot.cbor").exists()
    rejoined = Node(1, data_dir=tmp_path / "data1", network=LocalHub().network("1"),
                    cluster="test", durability="none", peers=unix_peers(tmp_path))
    await rejoined.start()  # with its members listed: it waits to catch up from them
    await rejoined.stop()


@pytest.mark.parametrize("in_the_way", ["journal.log", "journal.meta", "snapshot.cbor"])
async def test_rejoin_with_a_directory_in_the_way_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], in_the_way: str
) -> None:
    raft = await _node_with_history(tmp_path)
    path = raft / in_the_way
    path.unlink(missing_ok=True)
    path.mkdir()
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(tmp_path / "data1"))
    assert main(["rejoin", "--config", str(config), "--force"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert str(path) in err and "move it away" in err, err
    assert (raft / "journal.meta").exists()  # nothing was wiped


async def test_rejoin_holds_the_lock_while_it_wipes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node started while rejoin wipes would open a journal being removed."""
    await _node_with_history(tmp_path)
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(tmp_path / "data1"))
    wipe = rejoin.wipe_for_rejoin
    refused: list[str] = []

    def wipe_while_a_node_starts(*args: object, **kwargs: object) -> tuple[int, int]:
        try:
            DirectoryLock(tmp_path / "data1").acquire()
        except DataDirectoryLocked as exc:
            refused.append(str(exc))
        return wipe(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rejoin, "wipe_for_rejoin", wipe_while_a_node_starts)
    assert main(["rejoin", "--config", str(config), "--force"]) == 0
    assert refused, "a node could take the directory while rejoin wiped it"


class _Crash(Exception):
    """The process dies here."""


class _DiskDyingAtSecondRemove(OsDisk):
    def __init__(self) -> None:
        super().__init__()
        self.removed = 0

    def remove(self, path: str) -> None:
        self.removed += 1
        if self.removed == 2:
            raise _Crash(path)
        super().remove(path)


async def test_a_wipe_cut_short_keeps_the_floor(tmp_path: Path) -> None:
    """The floor is durable before the journal goes: restarted after a crash mid-wipe, the
    node still withholds its vote (and is not refused for its missing journal)."""
    raft = await _node_with_history(tmp_path)
    (raft / "snapshot.cbor").write_bytes(b"damaged")
    with pytest.raises(_Crash):
        rejoin.wipe_for_rejoin(_DiskDyingAtSecondRemove(), str(raft), str(raft / "snapshot.cbor"))
    meta = decode_meta((raft / "journal.meta").read_bytes())[0]
    assert meta["rejoin_floor"][1] >= 5, meta


@pytest.mark.parametrize(("node_id", "cluster"), [(2, "test"), (1, "other")])
async def test_rejoin_refuses_another_nodes_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], node_id: int, cluster: str
) -> None:
    """A configuration whose `data_dir` is another node's or cluster's (a typo): rejoin,
    even forced, removes nothing from it."""
    raft = await _node_with_history(tmp_path)
    config = write_config(tmp_path / "typo.toml", node_id, unix_peers(tmp_path),
                          cluster=cluster, data_dir=str(tmp_path / "data1"))
    _damage_middle_record(raft / "journal.log")
    before = (raft / "journal.log").read_bytes()
    assert main(["rejoin", "--config", str(config), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {config}: data directory ")
    assert f"belongs to node 1 of cluster 'test' (as {raft / 'journal.meta'} records), but " \
           f"this node's `id` and `cluster` are {node_id} and {cluster!r}; nothing was " \
           "removed. Give every node its own data directory: set this node's `data_dir`" in err
    assert (raft / "journal.log").read_bytes() == before
