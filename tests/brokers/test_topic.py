"""TopicCell over the broker storages: subscribers, streams, durable cursors, gc."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import SubscribeOutcome, TopicCell, UnknownSubscriber
from lazily_queue.client.brokers import open_provider
from lazily_queue.reactive import wait_until

from .conftest import fresh


async def test_publish_subscribe_and_stream(provider: Any) -> None:
    topic: TopicCell[Any] = TopicCell(provider.topic(fresh("news")))
    assert await topic.subscribe("a") is SubscribeOutcome.Subscribed
    assert await topic.subscribe("a") is SubscribeOutcome.AlreadyConnected
    for n in range(5):
        assert await topic.publish(n) == n
    got: list[int] = []

    async def read() -> None:
        async for value in topic.stream("a", batch=2):
            got.append(value)
            if len(got) == 5:
                return

    await asyncio.wait_for(read(), 20)
    assert got == [0, 1, 2, 3, 4]


async def test_durable_cursor_survives_a_new_connection(broker_url: str) -> None:
    name = fresh("durable")
    first = await open_provider(broker_url, poll_interval=0.2)
    try:
        topic: TopicCell[Any] = TopicCell(first.topic(name))
        await topic.subscribe("d")
        for n in range(3):
            await topic.publish(n)
        assert await topic.advance("d", timeout=10) == 0
        assert await topic.disconnect("d")
    finally:
        await first.close()
    second = await open_provider(broker_url, poll_interval=0.2)
    try:
        topic = TopicCell(second.topic(name))
        assert await topic.subscribe("d") is SubscribeOutcome.Reconnected
        await wait_until(lambda: topic.reader("d")() == [1, 2], context=topic.ctx, timeout=10)
        assert await topic.gc() == 1
        assert topic.base_offset() == 1
    finally:
        await second.close()


async def test_a_wait_ends_when_another_process_disconnects_its_ephemeral_subscriber(
        broker_url: str) -> None:
    """``advance`` and ``stream`` waiting on an ephemeral subscriber that another
    connection disconnects end with ``UnknownSubscriber`` once the mirror shows it gone."""
    name = fresh("gone-while-waiting")
    first = await open_provider(broker_url, poll_interval=0.2)
    second = await open_provider(broker_url, poll_interval=0.2)
    try:
        waiter: TopicCell[Any] = TopicCell(first.topic(name))
        other: TopicCell[Any] = TopicCell(second.topic(name))
        await other.subscribe("e", "ephemeral")
        await waiter.storage.sync()  # type: ignore[attr-defined]
        assert waiter.storage.cursor("e") is not None  # so neither call needs a refresh
        advancing = asyncio.ensure_future(waiter.advance("e"))
        streaming = asyncio.ensure_future(anext(aiter(waiter.stream("e"))))
        await asyncio.sleep(0)  # each takes its first step: nothing unread, it waits
        assert not advancing.done() and not streaming.done()
        assert await other.disconnect("e")
        for call in (advancing, streaming):
            with pytest.raises(UnknownSubscriber, match=r"subscribe it (first|again)"):
                await asyncio.wait_for(call, 10)
    finally:
        await first.close()
        await second.close()
