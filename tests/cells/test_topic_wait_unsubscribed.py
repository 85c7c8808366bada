"""A call waiting on a subscriber (``advance``, ``stream``) ends with
:class:`UnknownSubscriber` once the topic forgets that subscriber while it waits: deleted,
an ephemeral one disconnected (here, by another member, or with the session of the client
that owned it), or the topic deleted. Nothing would ever arrive for it otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import TopicCell, UnknownSubscriber, admin, testing
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)

#: Seconds a waiting call is given to end once its subscriber is gone (it hangs without).
ENDS_WITHIN = 10

Pair = tuple[TopicCell[Any], TopicCell[Any]]
"""The cell that waits and the one that forgets the subscriber (maybe the same)."""


@asynccontextmanager
async def _pair(kind: str) -> AsyncIterator[tuple[Pair, Any]]:
    if kind == "local":
        t: TopicCell[Any] = TopicCell(name="t")
        yield (t, t), None
        return
    size = 3 if kind == "raft3" else 1
    async with testing.cluster(size) as c:
        leader = await c.leader()
        waiter = c.node(2 if leader is c.node(1) else 1) if size == 3 else leader
        yield (waiter.topic("t"), leader.topic("t")), c


def _waits(kind: str, cell: TopicCell[Any], subscriber: str) -> Awaitable[Any]:
    if kind == "advance":
        return cell.advance(subscriber)
    return anext(aiter(cell.stream(subscriber)))


async def _ends_unknown(call: Awaitable[Any], forget: Callable[[], Awaitable[Any]]) -> None:
    task = asyncio.ensure_future(call)
    await asyncio.sleep(0.2)  # the call is waiting
    assert not task.done()
    await forget()
    with pytest.raises(UnknownSubscriber, match=r"subscribe it (first|again)"):
        await asyncio.wait_for(task, ENDS_WITHIN)


@pytest.mark.parametrize("call", ["advance", "stream"])
@pytest.mark.parametrize("kind", ["local", "raft1", "raft3"])
@pytest.mark.parametrize("how", ["delete durable", "delete offline", "disconnect ephemeral"])
async def test_a_wait_ends_when_its_subscriber_is_forgotten(
        kind: str, call: str, how: str) -> None:
    async with _pair(kind) as ((waiter, other), c):
        durability = "ephemeral" if how == "disconnect ephemeral" else "durable"
        await other.subscribe("s", durability)
        await other.publish("seen")
        if c is not None:
            await c.settle()  # the waiting member knows the subscriber
        assert await waiter.advance("s", timeout=10) == "seen"
        if how == "delete offline":
            await other.disconnect("s")  # an offline durable subscriber waits to come back
        forget = (other.disconnect if how == "disconnect ephemeral"
                  else other.delete_subscriber)
        await _ends_unknown(_waits(call, waiter, "s"), lambda: forget("s"))


@pytest.mark.parametrize("call", ["advance", "stream"])
@pytest.mark.parametrize("kind", ["raft1", "raft3"])
async def test_a_wait_ends_when_its_topic_is_deleted(kind: str, call: str) -> None:
    async with _pair(kind) as ((waiter, other), c):
        await other.subscribe("s")
        await c.settle()  # the waiting member knows the subscriber
        leader = await c.leader()
        await _ends_unknown(_waits(call, waiter, "s"),
                            lambda: admin.delete(leader, "topic", "t"))


@pytest.mark.parametrize("call", ["advance", "stream"])
async def test_a_clients_wait_ends_when_a_member_forgets_its_subscriber(call: str) -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        mine: TopicCell[Any] = client.topic("t")
        await mine.subscribe("s")
        await client.barrier()
        await _ends_unknown(_waits(call, mine, "s"),
                            lambda: c.node(2).topic("t").delete_subscriber("s"))


@pytest.mark.parametrize("call", ["advance", "stream"])
async def test_a_wait_ends_when_the_client_owning_the_ephemeral_subscriber_goes(
        call: str) -> None:
    async with cluster_with_clients() as (c, addresses):
        async with client_of(addresses) as client:
            await client.topic("t").subscribe("e", "ephemeral")
            await client.barrier()
            waiter = c.node(2).topic("t")
            task = asyncio.ensure_future(_waits(call, waiter, "e"))
            await asyncio.sleep(0.2)
            assert not task.done()
        with pytest.raises(UnknownSubscriber, match=r"subscribe it (first|again)"):
            await asyncio.wait_for(task, ENDS_WITHIN)
