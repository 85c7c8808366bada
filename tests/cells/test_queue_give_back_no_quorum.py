"""A member's pop whose caller went away gives its elements back even when that
give-back fails without applying: proposed on a member cut off from the others, it
fails with ``NoQuorum`` (not applied) once the member has had no majority for the grace
period, and is proposed again until it applies once the member is back. Every element
pushed is then received or queued, none twice."""

from __future__ import annotations

import pytest

from lazily_queue import testing
from lazily_queue.replicated import ops
from lazily_queue.storage.raft_queue import RaftQueueStorage
from tests.transports.transport_helpers import eventually

pytestmark = pytest.mark.timeout(60)


async def test_a_give_back_that_failed_without_applying_goes_again() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        for n in range(4):
            await leader.queue("jobs").push(n)
        await c.settle()
        member = (await c.followers())[0]
        storage = member.queue("jobs").storage
        assert isinstance(storage, RaftQueueStorage)
        # A pop applied for a caller that went away: its result goes to on_orphan.
        result = await member.driver.call(ops.QUEUE_POP_STAMPED, ["jobs", 1], timeout=5.0)
        assert result[0] == [0]
        c.isolate(member.node_id)
        await eventually(lambda: not member.status()["has_quorum"]
                         and member.status()["leader"] is None, 20.0)  # the member alone
        replica = member.driver.replica
        proposed = replica.proposals
        storage._return_orphan(result)
        await eventually(lambda: replica.proposals > proposed, 20.0)  # the give-back proposed
        # No leader to forward it to: after the grace period it fails, not applied.
        await eventually(lambda: replica.pending == 0, 10.0)
        c.heal()
        await eventually(lambda: member.queue("jobs").len() == 4, 20.0)  # the element back
        await c.settle()
        for node in c.running:
            assert node.queue("jobs").storage.elements() == [0, 1, 2, 3]  # type: ignore[attr-defined]
