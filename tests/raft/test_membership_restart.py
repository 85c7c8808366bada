"""A cluster grown at run time from one founder: every member finds the others, and a
member restarted from its data directory runs with the members its log holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from lazily_queue.node import Node
from lazily_queue.raft import patches
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.errors import NoQuorum
from lazily_queue.raft.meta import MetaStore

SECRET = b"membership-restart-secret"


def _address(tmp: Path, i: int) -> str:
    return f"unix://{tmp}/n{i}.sock"


def _node(tmp: Path, i: int, peers: list[int]) -> Node:
    """Node ``i`` configured with ``peers`` (the founder with none: it starts alone)."""
    return Node(i, data_dir=tmp / str(i), listen=_address(tmp, i), secret=SECRET,
                peers={p: _address(tmp, p) for p in peers} or None)


@asynccontextmanager
async def _grown(tmp: Path, size: int) -> AsyncIterator[list[Node]]:
    """Node 1 founds the cluster alone, then adds 2, 3, ... one at a time, each started
    with the members of its time in its configuration."""
    nodes = [_node(tmp, 1, [])]
    try:
        await nodes[0].start()
        await nodes[0].queue("q").push("founded")
        for i in range(2, size + 1):
            joining = _node(tmp, i, list(range(1, i + 1)))
            nodes.append(joining)
            await asyncio.gather(nodes[0].add_member(i, _address(tmp, i), timeout=10),
                                 joining.start())
        yield nodes
    finally:
        for node in nodes:
            await node.stop()


def _rewind_saved_commit(tmp: Path, i: int, commit: int = 1) -> None:
    """Leave node ``i``'s saved commit index where a kill -9 can leave it: the commit
    index is saved with the next metadata write (a new term, say), so a leader that
    grew its cluster within one term has 1 on disk."""
    store = MetaStore(OsDisk(), str(tmp / str(i) / "raft" / "journal.meta"))
    meta = store.load()
    meta["commit"] = commit
    store.store(meta)


async def _len(node: Node, name: str) -> int:
    await node.barrier(timeout=10)
    return node.queue(name).len()


async def test_members_added_one_at_a_time_all_link_to_each_other(tmp_path: Path) -> None:
    # Member 2 appends the change adding 3 before the record of 3's address applies
    # there: it links to 3 once it has, so 2 and 3 keep a majority without the founder.
    async with _grown(tmp_path, 3) as nodes:
        await nodes[0].stop()
        second, third = nodes[1], nodes[2]
        async with asyncio.timeout(10):
            while second.leader_id is None or second.leader_id == "1":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await second.queue("q").push("without the founder", timeout=10)
        assert await _len(third, "q") == 2


async def test_a_restarted_founder_runs_with_the_members_in_its_log(tmp_path: Path) -> None:
    async with _grown(tmp_path, 2):
        pass
    _rewind_saved_commit(tmp_path, 1)
    founder = _node(tmp_path, 1, [])  # configured alone, as it was first started
    await founder.start()
    try:
        assert founder.status()["members"] == ["1", "2"]
        with pytest.raises((NoQuorum, TimeoutError)):
            await founder.queue("q").push("alone", timeout=1.5)
        assert founder.leader_id is None
    finally:
        await founder.stop()


async def test_without_the_patch_a_restarted_founder_elects_itself(tmp_path: Path) -> None:
    async with _grown(tmp_path, 2):
        pass
    _rewind_saved_commit(tmp_path, 1)
    with patches.disabled("membership-from-log"):
        founder = _node(tmp_path, 1, [])
        await founder.start()
        try:
            # The defect: a member of a two-member cluster, the other one down, becomes
            # leader on its own vote (and commits its log's tail alone).
            async with asyncio.timeout(5):
                while not founder.is_leader:  # noqa: ASYNC110 - polls
                    await asyncio.sleep(0.01)
        finally:
            await founder.stop()


async def test_a_restarted_founder_finds_its_cluster_and_catches_up(tmp_path: Path) -> None:
    async with _grown(tmp_path, 3) as nodes:
        await nodes[0].stop()
        _rewind_saved_commit(tmp_path, 1)
        rest = nodes[1:]
        async with asyncio.timeout(10):
            while not any(n.is_leader for n in rest):  # noqa: ASYNC110 - polls
                await asyncio.sleep(0.05)
        leader = next(n for n in rest if n.is_leader)
        await leader.queue("q").push("while the founder was down", timeout=10)
        founder = nodes[0] = _node(tmp_path, 1, [])
        await founder.start()
        # It dials the others at the addresses it kept, though its log applies only up
        # to the commit index it saved, before their address records.
        await founder.queue("q").push("from the founder again", timeout=10)
        for node in nodes:
            assert await _len(node, "q") == 3, node.node_id


async def test_a_committed_change_applied_after_a_restart_undoes_no_later_one(
        tmp_path: Path) -> None:
    async with _grown(tmp_path, 3) as nodes:
        await nodes[0].remove_member(3, timeout=10)
        log = nodes[0].driver.replica.engine._SyncObj__raftLog[:]
        removal = max(index for command, index, _ in log if command[:1] == b"\x02")
    # Saved: committed up to the addition of 3, not its removal (in the log after it).
    _rewind_saved_commit(tmp_path, 1, removal - 1)
    founder = _node(tmp_path, 1, [])
    await founder.start()
    try:
        assert founder.status()["members"] == ["1", "2"]
        engine = founder.driver.replica.engine
        async with asyncio.timeout(5):  # the entries up to the saved commit index apply
            while engine._SyncObj__raftLastApplied < removal - 1:  # noqa: ASYNC110 - polls
                await asyncio.sleep(0.01)
        assert founder.status()["members"] == ["1", "2"]
    finally:
        await founder.stop()
