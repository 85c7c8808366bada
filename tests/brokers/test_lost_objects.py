"""A Redis that lost an object's keys while a process uses it (FLUSHDB by an operator, a
restart without persistence): the work queue declares itself again, so the items pushed
since are claimed, instead of every claim failing with NOGROUP until the process
restarts. A topic subscriber's consumer group destroyed outside this library is made
again at the subscriber's cursor (its record holds it); a topic stream whose entries
were deleted raises a typed error."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis

from lazily_queue import TopicCell, connect
from lazily_queue.brokers import BrokerObjectLost
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider

from .conftest import fresh


async def test_a_work_queue_whose_keys_were_flushed_declares_itself_again(
    redis_server: BrokerServer,
) -> None:
    name = fresh("flushed")
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=30)
        await jobs.push("lost with the keys")
        raw = aioredis.Redis.from_url(redis_server.url)
        await raw.delete(*[f"lq:{{w:{name}}}:{part}" for part in ("stream", "dead", "cfg")])
        await raw.aclose()
        await jobs.push("after")
        delivery = await jobs.claim("w", timeout=5)
        assert delivery.value == "after"
        await jobs.ack("w", delivery.delivery_id)
        await jobs.storage.sync()  # type: ignore[attr-defined]
        assert jobs.storage.pending_len() == 0


async def test_a_topic_subscriber_whose_group_was_destroyed_reads_on_from_its_cursor(
    redis_server: BrokerServer,
) -> None:
    name = fresh("no-group")
    provider = await open_provider(redis_server.url, poll_interval=0.2)
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.subscribe("d")
        await topic.subscribe("e", "ephemeral")
        for n in range(5):
            await topic.publish(n)
        assert await topic.advance("d", timeout=10) == 0
        stream = f"lq:{{t:{name}}}:stream"
        await raw.xgroup_destroy(stream, "s:d")
        await raw.xgroup_destroy(stream, "s:e")
        assert await topic.advance("d", timeout=10) == 1
        assert await topic.gc() == 2  # e, lagging, is clamped: its group made again
        assert [await topic.advance(s, timeout=10) for s in ("d", "e", "e")] == [2, 2, 3]
    finally:
        await raw.aclose()
        await provider.close()


async def test_a_topic_whose_stream_was_deleted_raises_a_typed_error(
    redis_server: BrokerServer,
) -> None:
    name = fresh("no-stream")
    provider = await open_provider(redis_server.url, poll_interval=0.2)
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.subscribe("d")
        for n in range(3):
            await topic.publish(n)
        await raw.delete(f"lq:{{t:{name}}}:stream")
        with pytest.raises(BrokerObjectLost, match="restore the topic"):
            await topic.poll("d")
        await topic.publish(3)  # the stream is made again, without the lost entries
        with pytest.raises(BrokerObjectLost, match="holds 1 entries"):
            await topic.poll("d")
    finally:
        await raw.aclose()
        await provider.close()
