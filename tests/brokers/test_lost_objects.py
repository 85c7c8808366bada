"""A Redis that lost an object's keys while a process uses it (FLUSHDB by an operator, a
restart without persistence): the work queue declares itself again, so the items pushed
since are claimed, instead of every claim failing with NOGROUP until the process
restarts. A topic subscriber's consumer group destroyed outside this library is made
again at the subscriber's cursor (its record holds it); a topic stream whose entries
were deleted, or a durable subscriber whose record was (its cursor), raises a typed
error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from lazily_queue import TopicCell, UnknownSubscriber, connect
from lazily_queue.brokers import BrokerObjectLost, SubscriberConsumerLost
from lazily_queue.brokers.servers import BrokerServer, RedisServer, find_binary
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


async def test_a_queue_whose_version_or_settings_key_was_deleted_raises_a_typed_error(
    redis_server: BrokerServer,
) -> None:
    """The state version orders the mirrors' reads, the settings hold the capacity: a
    queue without either while its list remains is half a queue."""
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        for part in ("version", "cfg"):
            name = fresh(f"no-{part}")
            async with connect(redis_server.url) as client:
                queue = client.queue(name, capacity=5)
                await queue.push_many(["a", "b"])
                await raw.delete(f"lq:{{q:{name}}}:{part}")
                for call in (queue.push("c"), queue.pop(timeout=5), queue.close()):
                    with pytest.raises(BrokerObjectLost,
                                       match=rf":{part} \(the queue .*delete the object's keys"):
                        await call
            async with connect(redis_server.url) as again:  # a new process is told too
                with pytest.raises(BrokerObjectLost, match=rf":{part} "):
                    await again.queue(name, capacity=5).push("c")
            assert await raw.llen(f"lq:{{q:{name}}}:list") == 2  # nothing taken
    finally:
        await raw.aclose()


async def test_a_topic_whose_offsets_were_deleted_raises_a_typed_error(
    redis_server: BrokerServer,
) -> None:
    name = fresh("no-meta")
    provider = await open_provider(redis_server.url, poll_interval=0.2)
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.subscribe("d")
        for n in range(3):
            await topic.publish(n)
        await raw.delete(f"lq:{{t:{name}}}:meta")
        for call in (lambda: topic.publish(3), lambda: topic.poll("d"), topic.gc,
                     lambda: topic.subscribe("e")):
            with pytest.raises(BrokerObjectLost, match=r":meta \(the topic base and end"):
                await call()
        assert await raw.xlen(f"lq:{{t:{name}}}:stream") == 3  # nothing was published
    finally:
        await raw.aclose()
        await provider.close()


async def test_a_work_queue_whose_settings_were_deleted_raises_a_typed_error(
    redis_server: BrokerServer,
) -> None:
    name = fresh("no-cfg")
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=30)
        await jobs.push("kept")
        raw = aioredis.Redis.from_url(redis_server.url)
        await raw.delete(f"lq:{{w:{name}}}:cfg")
        await raw.aclose()
        with pytest.raises(BrokerObjectLost, match=r":cfg \(the work queue settings"):
            await jobs.claim("w", timeout=5)
    async with connect(redis_server.url) as again:
        with pytest.raises(BrokerObjectLost, match=r":cfg "):
            await again.work_queue(name, visibility_timeout=60).push("x")


async def test_a_queue_and_a_topic_whose_keys_were_all_flushed_start_afresh(
    redis_server: BrokerServer,
) -> None:
    name = fresh("flushed-all")
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        async with connect(redis_server.url) as client:
            queue = client.queue(name, capacity=5)
            topic = client.topic(name)
            await queue.push("lost with the keys")
            await topic.publish("lost with the keys")
            await raw.delete(*await raw.keys(f"lq:{{[qt]:{name}}}:*"))
            await queue.push("after")
            assert await queue.pop(timeout=5) == "after"
            await topic.subscribe("d")
            await topic.publish("after")
            assert await topic.advance("d", timeout=5) == "after"
        async with connect(redis_server.url) as again:  # declared again, capacity kept
            with pytest.raises(Exception, match="capacity"):
                await again.queue(name, capacity=7).push("x")
    finally:
        await raw.aclose()


async def test_the_keys_a_lost_object_names_are_its_own_whatever_its_name(
    redis_server: BrokerServer,
) -> None:
    """The advice names a pattern of the object's keys: a name with a space (which ended
    the key early: ``lq:{q:*``, every queue's keys) or glob characters matches no other
    object's keys."""
    base = fresh("lost")
    name, others = f"{base} [1]*", [base, f"{base} 1x", f"{base} [1]*b"]
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        async with connect(redis_server.url) as client:
            for other in others:
                await client.queue(other).push("kept")
            queue = client.queue(name)
            await queue.push("a")
            await raw.delete(f"lq:{{q:{name}}}:version")
            with pytest.raises(BrokerObjectLost) as lost:
                await queue.push("b")
        pattern = str(lost.value).split("delete the object's keys (", 1)[1].split(")", 1)[0]
        matched = {key.decode() async for key in raw.scan_iter(match=pattern)}
        own = f"lq:{{q:{name}}}:"
        assert f"{own}list" in matched and all(k.startswith(own) for k in matched), pattern
    finally:
        await raw.aclose()


@pytest.mark.skipif(find_binary("redis-server") is None, reason="redis-server is not installed")
@pytest.mark.parametrize("deletion", ["flushall", "keys", "record"])
async def test_a_durable_subscriber_whose_record_was_deleted_says_so(deletion: str) -> None:
    """FLUSHALL, DEL of the topic's keys or HDEL of the subscriber's record while it is
    known: an advance, one that waits included, raises ``SubscriberConsumerLost`` (as on
    NATS) naming the subscriber and the fix, not ``UnknownSubscriber`` as if it had never
    subscribed; subscribing again goes on from the tail."""
    async with RedisServer() as server:
        raw = aioredis.Redis.from_url(server.url)
        provider = await open_provider(server.url, poll_interval=0.2)
        waiting: asyncio.Future[Any] | None = None
        try:
            name = fresh("no-record")
            topic: TopicCell[Any] = TopicCell(provider.topic(name))
            for subscriber in ("d", "w"):
                await topic.subscribe(subscriber)
            await topic.publish(0)
            assert await topic.advance("w", timeout=5) == 0
            waiting = asyncio.ensure_future(topic.advance("w", timeout=10))
            await asyncio.sleep(0.3)
            if deletion == "flushall":
                await raw.flushall()
            elif deletion == "keys":
                await raw.delete(*await raw.keys(f"lq:{{t:{name}}}:*"))
            else:
                await raw.hdel(f"lq:{{t:{name}}}:subs", "d", "w")
            message = rf"topic '{name}': subscriber '%s''s record .*subscribe it again"
            for _ in range(2):  # before and after the mirror saw it gone
                with pytest.raises(SubscriberConsumerLost, match=message % "d") as raised:
                    await topic.advance("d", timeout=5)
                assert isinstance(raised.value, UnknownSubscriber)
            with pytest.raises(SubscriberConsumerLost, match=message % "w"):
                await waiting
            await topic.storage.sync()  # type: ignore[attr-defined]
            with pytest.raises(SubscriberConsumerLost, match=message % "d"):
                await topic.poll("d")
            await topic.subscribe("d")
            await topic.publish("after")
            assert await topic.advance("d", timeout=5) == "after"
        finally:
            if waiting is not None:
                waiting.cancel()
            await raw.aclose()
            await provider.close()
