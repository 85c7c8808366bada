"""Topic options combine: a per-message ttl with msg_id and headers, a topic's ttl/max_age
with limits, and limits that ``reject``; on the local and the replicated topics (time is
a fake clock: nothing here waits on real time)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import LimitExceeded, Limits, TopicCell, UnsupportedOperation, testing
from tests.clock import FakeClock


async def test_a_per_message_ttl_combines_with_msg_id_and_headers_locally() -> None:
    clock = FakeClock()
    t: TopicCell[str] = TopicCell(max_age=60.0, clock=clock)
    await t.subscribe("s")
    first = await t.publish("a", ttl=5.0, msg_id="m-1", headers={"trace": "t1"})
    assert await t.publish("a", ttl=5.0, msg_id="m-1", headers={"trace": "t1"}) == first
    await t.publish("b")
    assert t.headers_of(first) == {"trace": "t1"} and t.elements() == ["a", "b"]
    clock.now += 5  # "a" is past its own ttl (the head): the next publish drops it
    await t.publish("c")
    assert t.elements() == ["b", "c"] and t.expired() == 1
    assert t.headers_of(first) == {}


async def test_an_expired_element_behind_a_live_head_is_never_handed_out() -> None:
    clock = FakeClock()
    t: TopicCell[str] = TopicCell(max_age=60.0, clock=clock)
    await t.subscribe("s")
    await t.publish("live")
    await t.publish("short", ttl=1.0)
    await t.publish("after")
    clock.now += 2
    assert await t.advance("s") == "live"
    assert await t.advance("s") == "after"  # "short" expired: skipped, not delivered
    assert t.read_stream("s") == [] and t.storage.skipped == 1  # type: ignore[attr-defined]
    await t.publish("tail", ttl=1.0)
    clock.now += 1
    assert t.try_advance("s") is None and t.read_stream("s") == []


async def test_the_earlier_deadline_wins() -> None:
    clock = FakeClock()
    t: TopicCell[str] = TopicCell(max_age=10.0, clock=clock)
    await t.subscribe("s")
    await t.publish("long", ttl=3600.0)  # the topic's max_age ends it first
    clock.now += 10
    await t.publish("x")
    assert t.elements() == ["x"] and t.expired() == 1


async def test_a_stream_skips_expired_elements() -> None:
    clock = FakeClock()
    t: TopicCell[str] = TopicCell(ttl=60.0, clock=clock)
    await t.subscribe("s")
    await t.publish("a")
    await t.publish("b", ttl=1.0)
    await t.publish("c")
    clock.now += 1
    got = []
    async for value in t.stream("s"):
        got.append(value)
        if len(got) == 2:
            break
    assert got == ["a", "c"]


async def test_a_topic_without_expiry_refuses_a_per_message_ttl_naming_it() -> None:
    with pytest.raises(UnsupportedOperation, match="LocalTopicStorage"):
        await TopicCell().publish("a", ttl=1.0)


async def test_a_local_topic_takes_a_ttl_and_limits_together() -> None:
    clock = FakeClock()
    t: TopicCell[str] = TopicCell(ttl=10.0, limits=Limits(max_length=2,
                                                            overflow="drop_oldest"),
                                  clock=clock)
    await t.subscribe("s")
    for v in ("a", "b", "c"):
        await t.publish(v)
    assert t.elements() == ["b", "c"] and t.dropped() == 1 and t.retained_bytes() == 2
    clock.now += 10
    await t.publish("d")
    assert t.elements() == ["d"] and t.expired() == 2 and t.retained_bytes() == 1


async def test_reject_refuses_without_waiting_and_waits_for_gc() -> None:
    t: TopicCell[str] = TopicCell(limits=Limits(max_length=2))
    await t.subscribe("s")
    await t.publish("a")
    await t.publish("b")
    assert t.bytes() == 2
    with pytest.raises(LimitExceeded) as refused:
        await t.publish("c", wait=False)
    assert refused.value.cell == "topic" and refused.value.limit == "max_length"
    with pytest.raises(LimitExceeded):
        t.try_publish("c")
    waiting = asyncio.ensure_future(t.publish("c"))
    await asyncio.sleep(0)
    assert not waiting.done() and t.elements() == ["a", "b"]
    assert await t.advance("s") == "a"
    await asyncio.sleep(0)
    assert not waiting.done()  # read, but still retained until GC
    assert await t.gc() == 1
    assert await waiting == 2
    assert t.elements() == ["b", "c"] and t.dropped() == 0 and t.bytes() == 2


async def test_reject_refuses_an_element_that_never_fits_at_once() -> None:
    t: TopicCell[str] = TopicCell(limits=Limits(max_bytes=4))
    with pytest.raises(LimitExceeded, match="never fits"):
        await t.publish("x" * 5)


async def test_the_bytes_and_dropped_readers_follow_the_retention() -> None:
    t: TopicCell[str] = TopicCell(limits=Limits(max_length=2, overflow="drop_oldest"))
    seen: list[tuple[int, int]] = []
    assert (t.bytes(), t.dropped()) == (0, 0)
    bytes_reader, dropped_reader = t.bytes, t.dropped
    for v in ("ab", "cd", "ef"):
        await t.publish(v)
        seen.append((bytes_reader(), dropped_reader()))
    assert seen == [(2, 0), (4, 0), (4, 1)]


async def test_replicated_topic_options_combine(wall: FakeClock) -> None:
    async with testing.cluster(3, maintenance_interval=None) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        t = leader.topic("t", max_age=60.0, limits=Limits(max_length=3,
                                                          overflow="drop_oldest"))
        await t.subscribe("s")
        first = await t.publish("a", ttl=5.0, msg_id="m", headers={"k": "v"})
        assert await t.publish("a", ttl=5.0, msg_id="m", headers={"k": "v"}) == first
        await t.publish("short", ttl=1.0)
        await t.publish("b")
        wall.now += 2
        assert await t.advance("s") == "a"
        assert await t.advance("s") == "b"  # "short" expired at the take's stamp
        wall.now += 5  # "a" too: the next publish drops both at the head
        await follower.topic("t", max_age=60.0, limits=Limits(
            max_length=3, overflow="drop_oldest")).publish("c")
        await c.settle()
        for node in (leader, follower):
            cell = node.topic("t", max_age=60.0, limits=Limits(max_length=3,
                                                               overflow="drop_oldest"))
            assert cell.elements() == ["b", "c"], node.node_id
            assert cell.expired() == 2 and cell.dropped() == 0


async def test_replicated_stream_leaves_expired_elements_out(wall: FakeClock) -> None:
    async with testing.cluster(1, maintenance_interval=None) as c:
        node = await c.leader()
        t = node.topic("t")
        await t.subscribe("s")
        await t.publish("a")
        await t.publish("b", ttl=1.0)
        await t.publish("c")
        wall.now += 2
        await node.barrier()  # an entry at the new stamp: the read's stamp
        got: list[Any] = []
        async for value in t.stream("s"):
            got.append(value)
            if len(got) == 2:
                break
        assert got == ["a", "c"]


async def test_replicated_reject_waits_for_gc_and_refuses_without_waiting() -> None:
    async with testing.cluster(1, maintenance_interval=None) as c:
        node = await c.leader()
        t = node.topic("t", limits=Limits(max_length=1))
        await t.subscribe("s")
        await t.publish("a")
        with pytest.raises(LimitExceeded) as refused:
            await t.publish("b", wait=False)
        assert refused.value.cell == "t" and refused.value.limit == "max_length"
        assert refused.value.value == 1
        waiting = asyncio.ensure_future(t.publish("b"))
        await asyncio.sleep(0)  # the publish is proposed: the barrier commits after it
        await node.barrier()
        assert t.elements() == ["a"] and not waiting.done()  # refused: it waits for room
        assert await t.advance("s") == "a"
        await t.gc()
        assert await asyncio.wait_for(waiting, 10) == 1
        assert t.elements() == ["b"] and t.bytes() == 1


async def test_a_transaction_publishes_with_a_ttl_and_counts_a_reject_topic() -> None:
    from lazily_queue import TransactionAborted, transaction

    clock = FakeClock()
    t: TopicCell[str] = TopicCell(ttl=60.0, clock=clock)
    await t.subscribe("s")
    async with transaction() as tx:
        op = tx.publish(t, "short", ttl=1.0, headers={"k": "v"}, msg_id="m")
        tx.publish(t, "long")
    assert op.result == 0 and t.headers_of(0) == {"k": "v"}
    clock.now += 1
    assert await t.advance("s") == "long"
    limited: TopicCell[str] = TopicCell(limits=Limits(max_length=2))
    with pytest.raises(TransactionAborted, match="full"):
        async with transaction() as tx:
            for v in ("a", "b", "c"):
                tx.publish(limited, v)
    assert limited.elements() == []


async def test_a_replicated_transaction_publishes_with_a_ttl(wall: FakeClock) -> None:
    from lazily_queue import TransactionAborted
    async with testing.cluster(1, maintenance_interval=None) as c:
        node = await c.leader()
        t = node.topic("t")
        await t.subscribe("s")
        async with node.transaction() as tx:
            op = tx.publish(t, "short", ttl=1.0, msg_id="m", headers={"k": "v"})
            tx.publish(t, "long")
        assert op.result == 0 and t.headers_of(0) == {"k": "v"}
        wall.now += 2
        assert await t.advance("s") == "long"
        limited = node.topic("l", limits=Limits(max_length=1))
        with pytest.raises(TransactionAborted, match="full"):
            async with node.transaction() as tx:
                tx.publish(limited, "a")
                tx.publish(limited, "b")
        assert limited.elements() == []



async def test_replicated_advance_waits_past_expired_elements(wall: FakeClock) -> None:
    async with testing.cluster(1, maintenance_interval=None) as c:
        node = await c.leader()
        t = node.topic("t")
        await t.subscribe("s")
        await t.publish("a", ttl=1.0)
        wall.now += 2
        taking = asyncio.ensure_future(t.advance("s"))
        await asyncio.sleep(0)  # the take is proposed: the barrier commits after it
        await node.barrier()
        assert t.subscriptions()["s"]["cursor"] == 1  # the take applied: "a" skipped
        assert not taking.done()  # nothing live to hand out yet
        await t.publish("b")
        assert await asyncio.wait_for(taking, 10) == "b"


async def test_a_transaction_counts_expired_head_elements_as_room(wall: FakeClock) -> None:
    from lazily_queue import TransactionAborted, transaction

    clock = FakeClock()
    local: TopicCell[str] = TopicCell(max_age=60.0, limits=Limits(max_length=2), clock=clock)
    await local.publish("a", ttl=1.0)
    await local.publish("b")
    clock.now += 1
    async with transaction() as tx:
        tx.publish(local, "c")
    assert local.elements() == ["b", "c"] and local.expired() == 1
    with pytest.raises(TransactionAborted, match="full"):
        async with transaction() as tx:
            tx.publish(local, "d")
    async with testing.cluster(1, maintenance_interval=None) as c:
        node = await c.leader()
        t = node.topic("t", limits=Limits(max_length=2))
        await t.publish("a", ttl=1.0)
        await t.publish("b", ttl=1.0)
        wall.now += 1
        async with node.transaction() as tx:
            tx.publish(t, "c")
            tx.publish(t, "d")  # both expired elements are room, once
        assert t.elements() == ["c", "d"] and t.expired() == 2
        with pytest.raises(TransactionAborted, match="full"):
            async with node.transaction() as tx:
                tx.publish(t, "e")
