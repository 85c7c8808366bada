"""A cluster of one leads as soon as it starts (nobody else can vote or lead), unless it
was wiped to rejoin: then it has nobody to catch up from."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from lazily_queue.raft import patches
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.engine import LEADER, EngineConfig
from lazily_queue.raft.rejoin import wipe_for_rejoin

from .harness import Manual, wiped_member

#: Election timeouts far longer than the waits below: a node that waited for one would
#: fail them.
SLOW_ELECTIONS = EngineConfig(election_timeout_min=20.0, election_timeout_max=30.0)


def _alone(tmp: Path) -> Node:
    return Node(1, data_dir=tmp / "data", listen=f"unix://{tmp}/n1.sock",
                secret=b"one-member-start", engine=SLOW_ELECTIONS)


async def test_a_one_member_cluster_commits_without_waiting_for_an_election(
        tmp_path: Path) -> None:
    for start in ("fresh", "restarted"):
        node = _alone(tmp_path)
        await node.start()
        try:
            async with asyncio.timeout(5):
                await node.queue("q").push(start)
            assert node.is_leader
        finally:
            await node.stop()
    node = _alone(tmp_path)
    await node.start()
    try:
        await node.barrier(timeout=5)
        assert [await node.queue("q").pop() for _ in range(2)] == ["fresh", "restarted"]
    finally:
        await node.stop()


async def test_with_pre_vote_off_a_one_member_cluster_still_waits_for_its_timeout(
        tmp_path: Path) -> None:
    # The election-timeout wait is the library's own: the pre-vote patch skips it.
    with patches.disabled("pre-vote"):
        node = _alone(tmp_path)
        await node.start()
        try:
            engine = node.driver.replica.engine
            async with asyncio.timeout(10):  # two full ticks done: an election would be on
                while engine.full_ticks < 3:  # noqa: ASYNC110 - polls a counter
                    await asyncio.sleep(0.01)
            assert not node.is_leader
        finally:
            await node.stop()


def test_a_member_alone_that_rejoins_never_elects_itself(tmp_path: Path) -> None:
    wiped_member(tmp_path)
    alone = Manual(tmp_path, ids=("1",))
    replica = alone.replicas["1"]
    assert replica.engine.rejoining
    for _ in range(200):  # 4 s of ticks, several election timeouts
        alone.now += 0.02
        alone.step("1")
        assert replica.engine.state != LEADER and replica.engine.term == 2


async def test_a_node_that_rejoins_knowing_no_other_member_refuses_to_start(
        tmp_path: Path) -> None:
    node = _alone(tmp_path)
    await node.start()
    await node.queue("q").push("lost with the journal")
    await node.stop()
    raft_dir = str(tmp_path / "data" / "raft")
    wipe_for_rejoin(OsDisk(), raft_dir, raft_dir + "/snapshot.cbor")
    for _ in range(2):  # the directory is not left locked
        with pytest.raises(InvalidConfiguration, match=r"knows no other member to catch up "
                           r"from: list the cluster's members in its `peers`.*A cluster of "
                           r"one cannot rejoin"):
            await _alone(tmp_path).start()
