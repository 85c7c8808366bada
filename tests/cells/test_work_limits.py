"""Work-queue limits (items pending and in flight, by number and bytes; reject or
drop_oldest of pending items) on the local and the replicated backends alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import LimitExceeded, Limits, WorkQueueCell, testing

Opener = Callable[..., WorkQueueCell]


@asynccontextmanager
async def _backend(kind: str) -> AsyncIterator[Opener]:
    if kind == "local":
        yield lambda name="w", **kw: WorkQueueCell(name=name, visibility_timeout=30, **kw)
        return
    async with testing.cluster(1) as c:
        node = await c.leader()
        yield lambda name="w", **kw: node.work_queue(name, visibility_timeout=30, **kw)


@pytest.mark.parametrize("kind", ["local", "raft1"])
async def test_reject_counts_pending_and_in_flight_and_waits_for_an_ack(kind: str) -> None:
    async with _backend(kind) as open_work:
        w = open_work(limits=Limits(max_length=2, max_bytes=10))
        assert w.limits() == Limits(2, 10, "reject")
        await w.push("abcd")
        await w.push("ef")
        delivery = await w.poll("worker", 0 if kind == "local" else None)
        assert delivery is not None and delivery.value == "abcd"
        with pytest.raises(LimitExceeded) as refused:  # one pending, one in flight
            await w.push("g", wait=False)
        assert (refused.value.cell, refused.value.limit, refused.value.value) == (
            "w", "max_length", 2)
        waiting = asyncio.ensure_future(w.push("g"))
        await asyncio.sleep(0)
        assert not waiting.done()
        await w.ack("worker", delivery.delivery_id)
        await asyncio.wait_for(waiting, 10)
        assert [p.value for p in w.pending()] == ["ef", "g"] and w.held_bytes() == 3
        with pytest.raises(LimitExceeded, match="max_bytes"):
            await w.push("x" * 11)


@pytest.mark.parametrize("kind", ["local", "raft1"])
async def test_drop_oldest_drops_pending_items_only(kind: str) -> None:
    async with _backend(kind) as open_work:
        w = open_work(limits=Limits(max_length=2, overflow="drop_oldest"))
        for value in ("a", "b", "c"):
            await w.push(value)
        assert [p.value for p in w.pending()] == ["b", "c"] and w.dropped() == 1
        first = await w.poll("worker", 0 if kind == "local" else None)
        second = await w.poll("worker", 0 if kind == "local" else None)
        assert first is not None and second is not None
        with pytest.raises(LimitExceeded):  # both leased: nothing pending to drop
            await w.push("d", wait=False)
        await w.ack("worker", first.delivery_id)
        await w.push("d")
        assert [p.value for p in w.pending()] == ["d"] and w.dropped() == 1


async def test_transactions_abort_whole_past_work_and_topic_limits() -> None:
    from lazily_queue import TopicCell, TransactionAborted, transaction

    w = WorkQueueCell(visibility_timeout=30, limits=Limits(max_length=1))
    t: TopicCell[Any] = TopicCell(limits=Limits(max_bytes=3, overflow="drop_oldest"))
    with pytest.raises(TransactionAborted) as aborted:
        async with transaction() as tx:
            tx.push(w, "a")
            tx.push(w, "b")
    assert aborted.value.code == "full" and aborted.value.index == 1 and w.pending_len() == 0
    with pytest.raises(TransactionAborted) as aborted:
        async with transaction() as tx:
            tx.push(w, "a")
            tx.publish(t, "abcd")
    assert aborted.value.code == "full" and w.pending_len() == 0 and t.end_offset() == 0
    dropping = WorkQueueCell(visibility_timeout=30,
                             limits=Limits(max_length=1, overflow="drop_oldest"))
    async with transaction() as tx:
        tx.push(dropping, "a")
        tx.push(dropping, "b")
    assert [p.value for p in dropping.pending()] == ["b"] and dropping.dropped() == 1


async def test_a_replicated_transaction_aborts_whole_past_a_work_limit() -> None:
    from lazily_queue import TransactionAborted

    async with testing.cluster(1) as c:
        node = await c.leader()
        w = node.work_queue("w", limits=Limits(max_bytes=4))
        q = node.queue("q")
        with pytest.raises(TransactionAborted) as aborted:
            async with node.transaction() as tx:
                tx.push(q, 1)
                tx.push(w, "ab")
                tx.push(w, "cde")
        assert aborted.value.code == "full" and aborted.value.index == 2
        assert q.len() == 0 and w.pending_len() == 0
        t = node.topic("t", limits=Limits(max_bytes=2, overflow="drop_oldest"))
        with pytest.raises(TransactionAborted):
            async with node.transaction() as tx:
                tx.push(q, 1)
                tx.publish(t, "abc")
        assert q.len() == 0
