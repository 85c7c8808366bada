"""A data directory missing its journal or snapshot (deleted by hand, lost) is refused at
start with the fix, never started empty (losing acknowledged entries) or wedged."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.cli import main
from lazily_queue.errors import DamagedData
from lazily_queue.node import Node
from lazily_queue.raft.network import LocalHub
from tests.cli.node_procs import unix_peers, write_config

ENGINE = replace(testing.FAST_ENGINE, compaction_min_entries=40, compaction_min_time=3600)


def _node(data: Path, peers: dict[int, str] | None = None) -> Node:
    return Node(1, data_dir=data, network=LocalHub().network("1"), cluster="test",
                engine=ENGINE, peers=peers)


async def _history(data: Path, pushes: int) -> Path:
    node = _node(data)
    await node.start()
    await node.wait_for_leader()
    for i in range(pushes):
        await node.queue("q").push(i)
    async with asyncio.timeout(20):
        while pushes > 40 and not node.status()["snapshots_taken"]:
            await node.driver.next_step()
    await node.stop()
    return data / "raft"


@pytest.mark.parametrize("pushes, missing", [(20, "journal.log"), (120, "snapshot.cbor")])
async def test_a_missing_file_is_refused_and_rejoin_recovers_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pushes: int, missing: str
) -> None:
    raft = await _history(tmp_path / "d", pushes)
    (raft / missing).unlink()
    before = sorted(p.name for p in raft.iterdir())
    node = _node(tmp_path / "d")
    with pytest.raises(DamagedData) as caught:
        await node.start()
    message = str(caught.value)
    assert missing in message and "lazily-queue rejoin" in message and "\n" not in message
    assert not node.running and sorted(p.name for p in raft.iterdir()) == before
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(tmp_path / "d"))
    assert main(["rejoin", "--config", str(config)]) == 0, capsys.readouterr().err
    assert missing in capsys.readouterr().out
    node = _node(tmp_path / "d", unix_peers(tmp_path))  # its members listed, as in `config`
    await node.start()  # empty: it catches up from its peers
    await node.stop()


async def test_an_older_snapshot_than_the_journal_continues_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A snapshot restored from a backup, or copied before a later compaction: started
    with it, the journal after it was dropped (acknowledged entries lost) without a word."""
    data = tmp_path / "d"
    node = _node(data)
    await node.start()
    await node.wait_for_leader()
    pushed = 0

    async def until(snapshots: int) -> None:
        nonlocal pushed
        async with asyncio.timeout(30):
            while node.status()["snapshots_taken"] < snapshots:
                await node.queue("q").push(pushed)
                pushed += 1

    await until(1)
    older = (data / "raft" / "snapshot.cbor").read_bytes()
    await until(3)
    await node.stop()
    (data / "raft" / "snapshot.cbor").write_bytes(older)
    node = _node(data)
    with pytest.raises(DamagedData, match="lazily-queue rejoin") as caught:
        await node.start()
    assert "begins at entry" in str(caught.value)
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(data))
    assert main(["rejoin", "--config", str(config)]) == 0, capsys.readouterr().err
    node = _node(data, unix_peers(tmp_path))  # its members listed, as in `config`
    await node.start()
    await node.stop()
