"""A cluster of one leads as soon as it starts: nobody else can vote or lead."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lazily_queue.node import Node
from lazily_queue.raft import patches
from lazily_queue.raft.engine import EngineConfig

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
            await asyncio.sleep(1)
            assert not node.is_leader
        finally:
            await node.stop()
