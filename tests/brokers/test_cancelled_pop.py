"""A pop cancelled while its round trip is in flight (its task cancelled, or an
``asyncio.wait_for`` around it running out) loses nothing on Redis: what the server
took goes back at the head, as a local queue's pop is cancellation-safe."""

from __future__ import annotations

import asyncio

from lazily_queue import QueueCell, connect
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client import Client

from .conftest import fresh


async def _a_then_b(client: Client) -> QueueCell:
    """A new queue holding ``"a"`` then ``"b"``."""
    queue = client.queue(fresh("cancel"))
    for value in ("a", "b"):
        await queue.push(value)
    return queue


async def _cancel_a_pop(queue: QueueCell) -> None:
    """Start a pop and cancel it while its round trip is in flight."""
    popping = asyncio.ensure_future(queue.storage.poll())
    await asyncio.sleep(0)
    popping.cancel()
    await asyncio.gather(popping, return_exceptions=True)  # as a wait_for around it ends


async def test_a_cancelled_redis_pop_puts_its_element_back_at_the_head(
    redis_server: BrokerServer,
) -> None:
    async with connect(redis_server.url) as client:
        queue = await _a_then_b(client)
        for _ in range(3):
            await _cancel_a_pop(queue)
        await asyncio.sleep(0.05)
        await queue.storage.sync()  # type: ignore[attr-defined]
        assert queue.storage.len() == 2
        assert [await queue.pop(timeout=5), await queue.pop(timeout=5)] == ["a", "b"]


async def test_the_next_pop_after_a_cancelled_one_gets_the_head(
    redis_server: BrokerServer,
) -> None:
    async with connect(redis_server.url) as client:
        queue = await _a_then_b(client)
        await _cancel_a_pop(queue)
        assert await queue.storage.poll() == "a"
        assert await queue.storage.poll() == "b"
