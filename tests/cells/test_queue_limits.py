"""Queue limits (max_length, max_bytes; reject or drop_oldest) on the local and the
replicated backends alike: readers, the typed refusal, waiting for room, transactions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    InvalidConfiguration,
    LimitExceeded,
    Limits,
    QueueCell,
    TransactionAborted,
    UnsupportedValue,
    serializer,
    testing,
    transaction,
)
from lazily_queue.core.limits import value_size

Opener = Callable[..., QueueCell[Any]]


@asynccontextmanager
async def _backend(kind: str) -> AsyncIterator[Opener]:
    if kind == "local":
        yield lambda name="q", **kw: QueueCell(name=name, **kw)
        return
    async with testing.cluster(1) as c:
        node = await c.leader()
        yield lambda name="q", **kw: node.queue(name, **kw)


BACKENDS = ["local", "raft1"]


@pytest.mark.parametrize("kind", BACKENDS)
async def test_reject_refuses_past_either_limit_with_a_typed_error(kind: str) -> None:
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_length=3, max_bytes=10))
        assert q.limits() == Limits(3, 10, "reject")
        await q.push(b"aaaa")
        await q.push(b"bbbb")
        assert q.quota is not None and q.quota.bytes() == 8 and not q.is_full()
        with pytest.raises(LimitExceeded) as refused:
            await q.push(b"ccc", wait=False)
        assert (refused.value.cell, refused.value.limit, refused.value.value) == (
            "q", "max_bytes", 10)
        assert "'q'" in str(refused.value) and "drop_oldest" in str(refused.value)
        assert str(await q.offer(b"ccc")) == "QueuePushError.Full"
        await q.push(b"c", wait=False)
        assert q.is_full() and q.len() == 3 and q.quota.bytes() == 9
        with pytest.raises(LimitExceeded) as refused:
            await q.push(b"d", wait=False)
        assert refused.value.limit == "max_length" and refused.value.value == 3
        assert q.quota.dropped() == 0 and await q.pop() == b"aaaa"
        assert q.quota.bytes() == 5 and not q.is_full()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_push_waits_for_room_and_wakes_on_a_pop(kind: str) -> None:
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_bytes=4))
        await q.push("abcd")
        waiting = asyncio.ensure_future(q.push("ef"))
        await asyncio.sleep(0)
        assert not waiting.done()
        assert await q.pop() == "abcd"
        await asyncio.wait_for(waiting, 10)
        assert q.len() == 1 and q.quota is not None and q.quota.bytes() == 2


@pytest.mark.parametrize("kind", BACKENDS)
async def test_drop_oldest_drops_the_oldest_and_counts_them(kind: str) -> None:
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_length=2, overflow="drop_oldest"))
        assert q.capacity() is None
        for i in range(5):
            await q.push(i, wait=False)
        assert q.len() == 2 and q.head() == 3 and not q.is_full()
        assert q.quota is not None and q.quota.dropped() == 3
        assert q.quota.bytes() == value_size(3) + value_size(4)
        assert [await q.pop(), await q.pop()] == [3, 4]


@pytest.mark.parametrize("kind", BACKENDS)
async def test_an_element_larger_than_max_bytes_never_fits(kind: str) -> None:
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_bytes=4, overflow="drop_oldest"))
        await q.push("ab")
        with pytest.raises(LimitExceeded) as refused:
            await q.push("abcde", wait=False)
        assert refused.value.limit == "max_bytes"
        assert q.len() == 1 and q.quota is not None and q.quota.dropped() == 0


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_serializer_counts_the_serialized_bytes(kind: str) -> None:
    codec = serializer(lambda v: ("x" * v).encode(), lambda b: len(b))
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_bytes=10), serializer=codec)
        await q.push(6)
        with pytest.raises(LimitExceeded):
            await q.push(5, wait=False)
        await q.push(4)
        assert q.quota is not None and q.quota.bytes() == 10


async def test_a_node_refuses_other_limits_for_an_open_or_declared_queue() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        q = node.queue("q", limits=Limits(max_length=2))
        await q.push(1)
        with pytest.raises(InvalidConfiguration, match="limits"):
            node.queue("q", limits=Limits(max_length=3))
        with pytest.raises(InvalidConfiguration):
            node.queue("q")
        other = node.queue("p")
        await other.push(1)
        node2 = node.queue("p2", limits=Limits(max_length=3))
        await node2.push(1)
        assert node.queue("p2", limits=Limits(max_length=3)) is node2


async def test_local_limits_and_capacity_are_given_once() -> None:
    with pytest.raises(ValueError, match="not both"):
        QueueCell(capacity=3, limits=Limits(max_length=3))
    with pytest.raises(ValueError, match="overflow"):
        Limits(overflow="drop_newest")
    with pytest.raises(ValueError, match="max_bytes"):
        Limits(max_bytes=0)
    q: QueueCell[Any] = QueueCell(limits=Limits(max_bytes=100))
    with pytest.raises(UnsupportedValue, match="serializer"):
        q.try_push(object())
    assert q.len() == 0


async def test_a_local_transaction_past_a_reject_limit_aborts_whole() -> None:
    q: QueueCell[Any] = QueueCell(limits=Limits(max_bytes=6))
    other: QueueCell[Any] = QueueCell()
    with pytest.raises(TransactionAborted) as aborted:
        async with transaction() as tx:
            tx.push(other, "x")
            tx.push(q, "abc")
            tx.push(q, "defg")
    assert aborted.value.code == "full" and aborted.value.index == 2
    assert q.len() == 0 and other.len() == 0


async def test_a_replicated_transaction_past_a_reject_limit_aborts_whole() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        q = node.queue("q", limits=Limits(max_length=1))
        other = node.queue("o")
        with pytest.raises(TransactionAborted) as aborted:
            async with node.transaction() as tx:
                tx.push(other, "x")
                tx.push(q, "a")
                tx.push(q, "b")
        assert aborted.value.code == "full" and aborted.value.cell == "q"
        assert q.len() == 0 and other.len() == 0


async def test_readers_update_on_every_change() -> None:
    q: QueueCell[Any] = QueueCell(limits=Limits(max_length=1, overflow="drop_oldest"))
    assert q.quota is not None
    seen = []  # readers are memoized: each change must clear the ones it moves
    for value in ("a", "bb", "ccc"):
        q.try_push(value)
        seen.append((q.head(), q.len(), q.quota.bytes(), q.quota.dropped()))
    assert seen == [("a", 1, 1, 0), ("bb", 1, 2, 1), ("ccc", 1, 3, 2)]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("overflow", ["reject", "drop_oldest"])
async def test_a_push_larger_than_max_bytes_is_refused_not_retried_forever(
        kind: str, overflow: str) -> None:
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_bytes=5, overflow=overflow))
        with pytest.raises(LimitExceeded, match="8 bytes never fits") as refused:
            await q.push("abcdefgh")  # waits for nothing: no room makes it fit
        assert (refused.value.limit, refused.value.value) == ("max_bytes", 5)
        with pytest.raises(LimitExceeded, match="never fits"):
            await q.push_many(["ab", "abcdefgh"])
        assert not q.is_closed() and await q.poll_many(5) == ["ab"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_push_waiting_for_bytes_waits_for_its_own_room(kind: str) -> None:
    async with _backend(kind) as open_queue:
        q = open_queue(limits=Limits(max_bytes=5))
        await q.push("abc")  # 2 bytes left: not full, yet no room for 4
        tries = _count_tries(q)
        waiting = asyncio.ensure_future(q.push("abcd"))
        at_store: list[int] = []
        waiting.add_done_callback(lambda _: at_store.append(q.len()))
        await asyncio.sleep(0.2)  # the loop runs (a spinning push would hold it)
        assert not waiting.done()
        assert tries == [1]  # refused once, then it waits (no retry until room is made)
        assert await q.pop() == "abc"
        await asyncio.wait_for(waiting, 5)
        assert at_store == [1]  # stored once "abc" had made room, not beside it
        assert await q.poll_many(5) == ["abcd"]


def _count_tries(q: QueueCell[Any]) -> list[int]:
    """The number of times ``q`` tries to store a pushed element (in a one-item list)."""
    tries = [0]
    try_push, offer = q.try_push, q.storage.offer

    def counted_try_push(value: Any) -> Any:
        tries[0] += 1
        return try_push(value)

    async def counted_offer(value: Any, **kwargs: Any) -> Any:
        tries[0] += 1
        return await offer(value, **kwargs)

    q.try_push = counted_try_push  # type: ignore[method-assign]
    q.storage.offer = counted_offer  # type: ignore[method-assign]
    return tries
