"""A member asked to remove itself answers at once, naming the way that works; through the
admin API the leader hands leadership over and points at the member that can remove it."""

from __future__ import annotations

import asyncio
import time

import pytest

from lazily_queue import testing
from lazily_queue.errors import InvalidConfiguration


async def test_the_leader_asked_to_remove_itself_says_how_at_once() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        me = leader.node_id
        started = time.monotonic()
        with pytest.raises(InvalidConfiguration, match=(
                f"node {me} leads the cluster and cannot remove itself; nothing was changed: "
                r"transfer leadership first .*then remove node \d on the new leader")):
            await leader.remove_member(me, timeout=30)
        assert time.monotonic() - started < 10  # not the 30 s deadline
        assert leader.driver.replica.engine.members == ["1", "2", "3"]
        assert leader.is_leader  # nothing was changed, leadership included
        new_leader = c.node(await leader.transfer_leadership())  # the way it names works
        await new_leader.remove_member(me)
        assert me not in new_leader.driver.replica.engine.members


async def test_a_follower_asked_to_remove_itself_names_the_leader_at_once() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        async with asyncio.timeout(10):  # the leader's first heartbeat may still be on its way
            while follower.leader_id != leader.node_id:  # noqa: ASYNC110 - plain state
                await asyncio.sleep(0.01)
        started = time.monotonic()
        with pytest.raises(InvalidConfiguration, match=(
                f"node {follower.node_id} cannot remove itself; nothing was changed: remove "
                f"it on the leader, node {leader.node_id}")):
            await follower.remove_member(follower.node_id, timeout=30)
        assert time.monotonic() - started < 10  # not the 30 s deadline
        await leader.barrier()
        assert leader.driver.replica.engine.members == ["1", "2", "3"]
