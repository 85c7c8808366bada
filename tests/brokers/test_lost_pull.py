"""A NATS topic pull that delivered messages nobody received (its reply lost or timed
out) leaves no gap: the next advance starts at the subscriber's cursor, not after the
lost messages, also with several processes advancing one subscriber at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lazily_queue import TopicCell
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider

from .conftest import fresh
from .reply_cutter import ReplyCutter

pytestmark = pytest.mark.timeout(60)


async def _open(url: str) -> Any:
    return await open_provider(url, poll_interval=0.2, view_limit=100, timeout=2)


@pytest.fixture
async def provider(nats_server: BrokerServer) -> AsyncIterator[Any]:
    backend = await _open(nats_server.url)
    try:
        yield backend
    finally:
        await backend.close()


async def _topic(provider: Any, name: str, count: int) -> Any:
    """A topic of ``count`` elements with subscriber ``s`` at offset 0."""
    storage = provider.topic(name)
    news: TopicCell[Any] = TopicCell(storage)
    await news.subscribe("s")
    await news.publish_many(range(count))
    await storage.sync()
    return storage


async def _lose_pull(provider: Any, storage: Any, n: int) -> None:
    """Pull ``n`` messages of subscriber ``s`` and never acknowledge them (a pull whose
    reply did not reach the caller)."""
    sub = await provider.js.pull_subscribe_bind(durable=storage._consumer_name("s"),
                                                stream=storage.stream)
    assert len(await sub.fetch(n, timeout=2)) == n
    await sub.unsubscribe()


async def _ack_pending(provider: Any, storage: Any) -> int:
    info = await provider.js.consumer_info(storage.stream, storage._consumer_name("s"))
    return int(info.num_ack_pending or 0)


async def test_a_poll_after_a_lost_pull_takes_the_element_at_the_cursor(
        provider: Any) -> None:
    storage = await _topic(provider, fresh("lost"), 10)
    await _lose_pull(provider, storage, 5)
    assert (await storage.poll("s")).result == 0
    await storage.sync()
    assert storage.cursor("s") == 1
    rest = [(await storage.poll("s")).result for _ in range(10)]
    assert rest == [*range(1, 10), None]


async def test_a_poll_after_a_lost_pull_of_every_element_is_not_empty(
        provider: Any) -> None:
    storage = await _topic(provider, fresh("lost-all"), 3)
    await _lose_pull(provider, storage, 3)
    assert [(await storage.poll("s")).result for _ in range(4)] == [0, 1, 2, None]


async def test_an_advance_to_after_one_that_timed_out_stops_at_its_target(
        nats_server: BrokerServer) -> None:
    async with ReplyCutter(nats_server.port) as cutter:
        provider = await _open(f"nats://127.0.0.1:{cutter.port}")
        try:
            storage = await _topic(provider, fresh("cut"), 10)
            cutter.arm(b"MSG.NEXT")
            with pytest.raises(BrokerUnavailable):
                await storage.advance_to("s", 5)
            assert cutter.cut == 1
            assert await _ack_pending(provider, storage) == 5  # delivered, never seen
            assert (await storage.advance_to("s", 5)).result == 5
            assert (await storage.poll("s")).result == 5
        finally:
            await provider.close()


async def test_concurrent_pollers_after_a_lost_pull_leave_no_gap(
        nats_server: BrokerServer, provider: Any) -> None:
    name = fresh("pollers")
    storage = await _topic(provider, name, 30)
    await _lose_pull(provider, storage, 5)
    other = await _open(nats_server.url)
    try:
        second = other.topic(name)
        await second.sync()

        async def drain(s: Any) -> list[Any]:
            got = []
            while (value := (await s.poll("s")).result) is not None:
                got.append(value)
            return got

        first_got, second_got = await asyncio.gather(drain(storage), drain(second))
    finally:
        await other.close()
    assert set(first_got) | set(second_got) == set(range(30))
    await storage.sync()
    assert storage.cursor("s") == 30
    assert await _ack_pending(provider, storage) == 0


async def test_an_advance_to_behind_another_process_advance_stays_where_it_is(
        nats_server: BrokerServer, provider: Any) -> None:
    name = fresh("behind")
    storage = await _topic(provider, name, 10)
    other = await _open(nats_server.url)
    try:
        behind = other.topic(name)
        await behind.sync()
        assert (await storage.advance_to("s", 5)).result == 5
        assert (await behind.advance_to("s", 3)).result == 5
        assert (await behind.poll("s")).result == 5
    finally:
        await other.close()
    assert [(await storage.poll("s")).result for _ in range(5)] == [6, 7, 8, 9, None]
