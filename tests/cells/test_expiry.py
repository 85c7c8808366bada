"""Message expiry on the cells: per-message and per-cell TTL, on the local and the
replicated backends alike (time is a fake clock: nothing here waits on real time)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lazily_queue import (
    InvalidConfiguration,
    InvalidTtl,
    OffsetOutOfRange,
    QueueCell,
    TopicCell,
    UnsupportedOperation,
    WorkQueueCell,
    testing,
)
from lazily_queue.core.queue import QueuePopError
from tests.clock import FakeClock


async def test_a_local_queue_never_pops_an_expired_element_and_counts_it() -> None:
    clock = FakeClock()
    q: QueueCell[Any] = QueueCell(ttl=10.0, clock=clock)
    await q.push("default")
    await q.push("short", ttl=1.0)
    await q.push("long", ttl=60.0)
    assert q.len() == 3 and q.expired() == 0
    clock.now += 5
    assert await q.pop() == "default"
    assert q.expired() == 0
    clock.now += 1  # "short" expired at +1 s, and it is the head now
    assert await q.pop() == "long"
    assert q.expired() == 1 and q.len() == 0 and q.is_empty()


async def test_a_local_default_ttl_empties_the_queue_and_the_readers_follow() -> None:
    clock = FakeClock()
    q: QueueCell[Any] = QueueCell(ttl=2.0, clock=clock)
    for v in range(3):
        await q.push(v)
    assert not q.is_empty()
    clock.now += 2
    assert await q.poll() is QueuePopError.Empty
    assert q.is_empty() and q.len() == 0 and q.expired() == 3


async def test_an_element_given_back_to_a_local_queue_keeps_its_deadline() -> None:
    clock = FakeClock()
    q: QueueCell[Any] = QueueCell(ttl=100.0, clock=clock)
    await q.push("a", ttl=1.0)
    storage: Any = q.storage
    taken = await storage.poll_stamped(1)
    await storage.unpoll_stamped(*taken)  # its receiver went away
    clock.now += 1
    assert await q.poll() is QueuePopError.Empty
    assert q.expired() == 1


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "5", True, None])
async def test_bad_ttls_are_refused_before_anything_changes(bad: Any) -> None:
    q: QueueCell[Any] = QueueCell(ttl=10.0, clock=FakeClock())
    if bad is None:
        await q.push("ok", ttl=bad)  # None: the default applies
        return
    with pytest.raises(InvalidTtl, match="ttl"):
        await q.push("a", ttl=bad)
    with pytest.raises(InvalidTtl):
        await q.offer("a", ttl=bad)
    with pytest.raises(InvalidTtl):
        QueueCell(ttl=bad)
    assert q.len() == 0


async def test_a_backend_without_expiry_refuses_a_ttl_by_name() -> None:
    q: QueueCell[Any] = QueueCell()
    with pytest.raises(UnsupportedOperation, match="VecDequeStorage has no message expiry"):
        await q.push("a", ttl=1.0)
    assert q.len() == 0
    expiring: QueueCell[Any] = QueueCell(ttl=1.0)
    await expiring.push("a", ttl=1.0, msg_id="m")  # msg_id and ttl combine
    await expiring.push("a", ttl=1.0, msg_id="m")
    assert expiring.len() == 1


async def test_a_replicated_queue_expires_on_the_leaders_clock(wall: FakeClock) -> None:
    async with testing.cluster(3, maintenance_interval=None) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        q = leader.queue("q", ttl=30.0)
        await q.push("default")
        await q.push("short", ttl=1.0)
        await q.push("kept", ttl=3600.0)
        wall.now += 31  # both TTLs passed by the leader's clock; no sweep ran
        assert await follower.queue("q", ttl=30.0).pop() == "kept"
        await c.settle()
        for node in (leader, follower):
            cell = node.queue("q")
            assert cell.len() == 0 and cell.expired() == 2
        with pytest.raises(InvalidTtl):
            await q.push("x", ttl=-1)


async def test_a_local_work_queue_never_leases_an_expired_item() -> None:
    clock = FakeClock()
    w = WorkQueueCell(visibility_timeout=5.0, clock=clock, ttl=10.0)
    await w.push("a")
    await w.push("short", ttl=1.0)
    await w.push("c")
    first = await w.claim("x")
    assert first.value == "a"
    clock.now += 2
    second = await w.claim("y")
    assert second.value == "c" and w.expired() == 1
    # A leased item is never expired under its holder nor after it comes back.
    clock.now += 20
    await w.nack("x", first.delivery_id)
    again = await w.claim("x")
    assert again.value == "a" and again.attempt == 2
    await w.push("late")
    clock.now += 10
    assert await w.poll("x") is None
    assert w.expired() == 2 and w.pending_len() == 0 and w.is_empty()


async def test_a_local_work_queue_with_ttl_needs_a_clock_and_bad_ttls_are_refused() -> None:
    with pytest.raises(InvalidConfiguration, match="clock"):
        WorkQueueCell(visibility_timeout=5.0, ttl=1.0)
    w = WorkQueueCell(visibility_timeout=5.0, clock=FakeClock(), ttl=1.0)
    with pytest.raises(InvalidTtl):
        await w.push("a", ttl=0)
    with pytest.raises(UnsupportedOperation, match="no message expiry"):
        await WorkQueueCell(visibility_timeout=5.0).push("a", ttl=1.0)
    assert w.pending_len() == 0


async def test_a_replicated_work_queue_expires_on_the_leaders_clock(wall: FakeClock) -> None:
    async with testing.cluster(3, maintenance_interval=None) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        jobs = leader.work_queue("jobs", ttl=30.0)
        await jobs.push("default")
        await jobs.push("short", ttl=1.0)
        await jobs.push("kept")
        wall.now += 2
        first = await follower.work_queue("jobs").claim("x")
        assert first.value == "default"
        assert (await follower.work_queue("jobs").claim("x")).value == "kept"
        await c.settle()
        for node in (leader, follower):
            assert node.work_queue("jobs").expired() == 1


async def test_a_local_topic_drops_what_is_past_max_age_even_unread() -> None:
    clock = FakeClock()
    t: TopicCell[Any] = TopicCell(max_age=10.0, clock=clock)
    await t.subscribe("durable")
    await t.publish("old")
    clock.now += 5
    await t.publish("mid")
    await t.disconnect("durable")
    clock.now += 6  # "old" is 11 s old, "mid" 6 s
    seen = t.expired()
    await t.publish("new")
    assert t.elements() == ["mid", "new"] and t.base_offset() == 1
    assert t.expired() == 1 and seen == 0
    await t.reconnect("durable")
    # The durable subscriber continues at the first retained element; the gap shows in
    # its cursor and in the storage's count.
    assert t.read_stream("durable") == ["mid", "new"]
    assert t.storage.skipped == 1  # type: ignore[attr-defined]
    with pytest.raises(OffsetOutOfRange):
        await t.seek("durable", 0)


async def test_a_topic_checks_a_per_message_ttl() -> None:
    t: TopicCell[Any] = TopicCell(ttl=5.0, clock=FakeClock())
    with pytest.raises(UnsupportedOperation, match="no message expiry"):
        await TopicCell().publish("a", ttl=1.0)
    with pytest.raises(InvalidTtl):
        await t.publish("a", ttl=-1.0)
    with pytest.raises(InvalidTtl, match="max_age"):
        TopicCell(max_age=0)
    assert t.elements() == []


async def test_a_replicated_topic_drops_by_age_on_the_leaders_clock(wall: FakeClock) -> None:
    async with testing.cluster(3, maintenance_interval=None) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        t = leader.topic("t", max_age=60.0)
        await t.subscribe("d")
        await t.publish("a")
        await t.publish("b")
        wall.now += 61
        await follower.topic("t").publish("c")
        await c.settle()
        for node in (leader, follower):
            cell = node.topic("t")
            assert cell.elements() == ["c"] and cell.expired() == 2
        assert leader.topic("t").read_stream("d") == ["c"]
        with pytest.raises(InvalidConfiguration, match="expiry rules"):
            leader.topic("t", max_age=5.0)


async def test_a_thread_pushes_with_a_ttl() -> None:
    import asyncio

    clock = FakeClock()
    q: QueueCell[Any] = QueueCell(ttl=100.0, clock=clock)
    handle = q.threadsafe()

    def produce() -> None:
        handle.push("short", ttl=1.0)
        handle.offer("long", ttl=50.0)

    await asyncio.to_thread(produce)
    clock.now += 2
    assert await q.pop() == "long" and q.expired() == 1


async def test_expiry_follows_the_claim_order_of_priorities_and_delays() -> None:
    clock = FakeClock()
    w = WorkQueueCell(visibility_timeout=5.0, clock=clock, ttl=10.0)
    await w.push("low")
    await w.push("high", priority=5)
    await w.push("later", delay=8.0)  # due at +8, expired at +10 like the others
    clock.now += 11
    await w.push("fresh", priority=1)
    assert (await w.claim("x")).value == "fresh"  # "high" expired at the head
    assert w.expired() == 1  # the others wait behind the live head it had
    assert await w.poll("x") is None
    assert w.expired() == 3 and w.pending_len() == 0 and w.delayed_len() == 0
    await w.push("a", ttl=1.0, priority=2)  # a ttl combines with a priority
    assert w.pending_by_priority() == {2: 1}
