"""Work-queue scheduling over Raft and a client: a follower's consumer waiting for a
delayed item wakes when the leader makes it claimable; priorities, delayed nacks and a
retry policy behave as locally; every member and a client agree."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from datetime import UTC, datetime, timedelta

import pytest

from lazily_queue import InvalidConfiguration, InvalidSchedule, RetryPolicy, testing
from lazily_queue.errors import UnsupportedOperation
from tests.clock import FakeClock


async def test_a_followers_waiting_consumer_wakes_when_a_delayed_item_falls_due() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        w = follower.work_queue("w")
        waiting = asyncio.create_task(w.claim("f"))
        await leader.work_queue("w").push("later", delay=0.3)
        await c.settle()
        assert follower.work_queue("w").delayed_len() in (0, 1)
        job = await asyncio.wait_for(waiting, 30)
        assert job.value == "later"
        # Claimed at a leader stamp at least the delay after the push's stamp.
        assert job.enqueued > 0 and follower.view.now >= job.enqueued + 300


async def test_priority_nack_delay_and_retry_agree_on_every_member() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        retry = RetryPolicy.fixed(3600)
        w = leader.work_queue("jobs", retry=retry)
        with pytest.raises(InvalidConfiguration):
            leader.work_queue("jobs")  # open with other settings
        for value, prio in [("a", 0), ("b", 4), ("c", 8)]:
            await w.push(value, priority=prio)
        await w.push("d", not_before=datetime.now(UTC) + timedelta(hours=1))
        with pytest.raises(InvalidSchedule):
            await w.push("e", not_before=datetime.now())  # naive
        first = await w.claim("x")
        assert first.value == "c"
        await w.nack("x", first.delivery_id)  # the policy: claimable in an hour
        second = await w.claim("x")
        assert second.value == "b"
        await w.nack("x", second.delivery_id, delay=0)  # at once, keeps its level
        assert [p.value for p in w.pending()] == ["b", "a"]
        assert w.delayed_len() == 2 and w.pending_by_priority() == {4: 1, 0: 1}
        await c.settle()
        captures = {str(n.view.capture()["work_queues"]) for n in c.running}
        assert len(captures) == 1


async def test_a_client_pushes_with_priority_and_delay() -> None:
    from lazily_queue import ClientAccess, ClientGrant, Credentials, connect

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("web", b"token-of-the-web-tier", produce=["*"], consume=["*"])
        return {"clients": ClientAccess([grant], listen=f"memory://sched-{node_id}")}

    async with testing.cluster(3, node_options=options) as c:
        addresses = [f"memory://sched-{i}" for i in range(1, 4)]
        async with connect(addresses, Credentials("web", b"token-of-the-web-tier"),
                           ping_interval=0.2, ping_timeout=1.0) as client:
            w = client.work_queue("w")
            await w.push("low")
            await w.push("high", priority=9)
            await w.push("later", delay=3600)
            async with contextlib.aclosing(w.deliveries("x", prefetch=1)) as jobs:
                async for job in jobs:
                    assert job.value == "high"
                    break
            member = c.node(1).work_queue("w")
            await c.settle()
            assert member.delayed_len() == 1


async def test_a_member_promotes_at_the_leaders_stamp_and_refuses_a_given_time() -> None:
    wall = FakeClock(1_000.0)
    async with testing.cluster(1, maintenance_interval=None, wall_clock=wall) as c:
        w = (await c.leader()).work_queue("w")
        await w.push("later", delay=60)
        with pytest.raises(UnsupportedOperation, match=r"promote_due\(\) without now"):
            await w.promote_due(now=2_000_000)  # past the due time: still refused
        assert await w.promote_due() == 0
        assert (w.delayed_len(), w.pending_len()) == (1, 0)
        wall.now += 60
        assert await w.promote_due() == 1  # at the stamp of its own entry
        assert (w.delayed_len(), w.pending_len()) == (0, 1)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
async def test_a_time_no_member_can_use_is_refused_at_the_call(
    bad: float, caplog: pytest.LogCaptureFixture,
) -> None:
    """As a local work queue does: ``ValueError`` before anything is proposed, on a
    member and on a client (before, it was committed and failed while applying on every
    member, each logging a traceback)."""
    from lazily_queue import ClientAccess, ClientGrant, Credentials, connect

    grant = ClientGrant("web", b"token-of-the-web-tier", produce=["*"], consume=["*"],
                        admin=["*"])
    options: testing.NodeOptions = {
        "clients": ClientAccess([grant], listen="memory://bad-time")}
    async with testing.cluster(1, node_options=lambda _id: options) as c:
        node = await c.leader()
        async with connect("memory://bad-time",
                           Credentials("web", b"token-of-the-web-tier")) as client:
            for w in (node.work_queue("w"), client.work_queue("w")):
                await w.push("job")
                job = await w.claim("x")
                await c.settle()
                proposed = node.driver.replica.proposals
                calls = [w.poll("x", now=bad), w.poll_many("x", 2, now=bad),
                         w.reap_expired(now=bad), w.extend("x", job.delivery_id, now=bad),
                         w.nack("x", job.delivery_id, delay=1.0, now=bad)]
                for call in calls:
                    with pytest.raises(ValueError, match="now must be a finite time from 0 to"):
                        await call
                assert node.driver.replica.proposals == proposed  # nothing was sent
                receipt = await w.ack("x", job.delivery_id)  # still leased as it was
                assert receipt.outcome == "acked" and not receipt.duplicate
    assert not [r for r in caplog.records if "failed while applying" in r.getMessage()]


async def test_a_fraction_of_a_millisecond_is_refused_on_a_member_and_a_client() -> None:
    """A member would cut it off where the op applies, so the same program would end a
    lease otherwise than on a local work queue (whose times keep their fractions):
    ``ValueError`` naming the rule before anything is proposed; whole milliseconds,
    as ints or floats, are taken."""
    from lazily_queue import ClientAccess, ClientGrant, Credentials, WorkQueueCell, connect

    local = WorkQueueCell(visibility_timeout=1000)
    await local.push("job")
    leased = await local.poll("x", now=0.4)
    assert leased is not None and leased.deadline == 1000.4
    assert await local.reap_expired(now=1000.5) == 1  # what a member cannot follow
    grant = ClientGrant("web", b"token-of-the-web-tier", produce=["*"], consume=["*"],
                        admin=["*"])
    options: testing.NodeOptions = {
        "clients": ClientAccess([grant], listen="memory://fraction")}
    async with testing.cluster(1, node_options=lambda _id: options) as c:
        node = await c.leader()
        async with connect("memory://fraction",
                           Credentials("web", b"token-of-the-web-tier")) as client:
            for name, w in (("m", node.work_queue("m", visibility_timeout=1.0)),
                            ("c", client.work_queue("c", visibility_timeout=1.0))):
                await w.push("job")
                await c.settle()
                base = node.driver.replica.fsm.now - 100_000  # before the leader's stamp
                proposed = node.driver.replica.proposals
                for call in (w.poll("x", now=base + 0.4), w.reap_expired(now=base + 0.5),
                             w.poll_many("x", 2, now=base + 0.5)):
                    with pytest.raises(ValueError, match="now must be whole milliseconds on "
                                                         "a node or a client"):
                        await call
                # time.time() (seconds) is refused naming the unit, not "round it": rounded,
                # it would be a time in 1970, and every lease would end at once
                with pytest.raises(ValueError, match=r"milliseconds since the Unix epoch, "
                                   r"e\.g\. round\(time\.time\(\) \* 1000\)") as refused:
                    await w.poll("x", now=time.time())
                assert "round it" not in str(refused.value)
                assert node.driver.replica.proposals == proposed, name  # nothing was sent
                job = await w.poll("x", now=float(base))
                assert job is not None and job.deadline == base + 1000, name
                assert await w.reap_expired(now=base + 1001) == 1, name
                await w.ack("x", (await w.poll("x", now=float(base + 2000))).delivery_id)
                late = base + 0.5  # on an empty queue: refused before it waits
                with pytest.raises(ValueError, match="now must be whole milliseconds"):
                    await asyncio.wait_for(w.claim("x", now=late, timeout=0), 5)
                with pytest.raises(ValueError, match="now must be whole milliseconds"):
                    await asyncio.wait_for(w.claim_many("x", 2, now=late), 5)
                with pytest.raises(ValueError, match="now must be whole milliseconds"):
                    await asyncio.wait_for(anext(aiter(w.deliveries("x", now=late))), 5)
