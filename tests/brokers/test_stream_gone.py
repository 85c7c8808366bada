"""A NATS queue's or work queue's stream deleted by an operator (``nats stream rm``), or
deleted and made again, while a process uses it: the object is declared again, so a
process that only pushes goes on (before, each push raised until a pop or claim
declared the object again), and the mirror shows the new stream, not what it knew of
the old one under the same sequences."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import pytest

from lazily_queue import connect
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh

pytestmark = pytest.mark.timeout(60)


async def _admin(server: BrokerServer, change: Any) -> None:
    admin = await nats.connect(server.url)
    try:
        await change(admin.jetstream())
    finally:
        await admin.close()


async def test_pushes_go_on_after_the_stream_was_deleted(nats_server: BrokerServer) -> None:
    async with connect(nats_server.url, poll_interval=0.2, timeout=3) as client:
        orders = client.queue(fresh("gone-q"))
        jobs = client.work_queue(fresh("gone-w"), visibility_timeout=30, max_deliveries=3)
        await orders.push("lost with the stream")
        await jobs.push("lost with the stream")
        streams = (orders.storage.stream, jobs.storage.stream)  # type: ignore[attr-defined]

        async def delete(js: Any) -> None:
            for stream in streams:
                await js.delete_stream(stream)

        await _admin(nats_server, delete)
        await orders.push("after")
        await jobs.push("after")
        assert await orders.pop(timeout=5) == "after"
        delivery = await jobs.claim("w", timeout=5)
        assert delivery.value == "after"
        await jobs.ack("w", delivery.delivery_id)


async def test_a_queue_mirror_shows_the_stream_made_again(nats_server: BrokerServer) -> None:
    """The new stream numbers its messages from 1 again: the mirror does not take them
    for the old stream's."""
    async with connect(nats_server.url, poll_interval=0.2, timeout=3) as client:
        orders = client.queue(fresh("remade-q"))
        await orders.push_many(["a", "b"])
        await orders.storage.sync()  # type: ignore[attr-defined]
        stream = orders.storage.stream  # type: ignore[attr-defined]

        async def remake(js: Any) -> None:
            config = (await js.stream_info(stream)).config
            await js.delete_stream(stream)
            await js.add_stream(config)

        await _admin(nats_server, remake)
        await orders.push("c")
        await orders.storage.sync()  # type: ignore[attr-defined]
        assert (len(orders), orders.storage.peek()) == (1, "c")  # type: ignore[attr-defined]
        assert await orders.pop(timeout=5) == "c"


async def test_a_queue_stream_given_another_capacity_says_how_to_set_it_back(
    nats_server: BrokerServer,
) -> None:
    """An operator's ``max_msgs`` on a queue's stream is another capacity: refused with
    the edit that undoes it (not the deletion of the stream and its elements)."""
    from nats.js.api import DiscardPolicy

    from lazily_queue.brokers import IncompatibleBrokerObject

    async with connect(nats_server.url, poll_interval=0.2, timeout=3) as client:
        orders = client.queue(fresh("cap-q"))
        await orders.push("kept")
        stream = orders.storage.stream  # type: ignore[attr-defined]
        config: Any = None

        async def limit(js: Any) -> None:
            nonlocal config
            config = (await js.stream_info(stream)).config
            config.max_msgs, config.discard = 50, DiscardPolicy.NEW
            await js.update_stream(config)

        await _admin(nats_server, limit)
        with pytest.raises(IncompatibleBrokerObject,
                           match=rf"max_msgs 50 .*`nats stream edit {stream} --max-msgs -1`"):
            async with asyncio.timeout(5):
                while True:  # refused once the server's announcement is in
                    await orders.push("more")
                    await asyncio.sleep(0.05)

        async def unlimit(js: Any) -> None:
            config.max_msgs = -1
            await js.update_stream(config)

        await _admin(nats_server, unlimit)
        assert await orders.pop(timeout=5) == "kept"
