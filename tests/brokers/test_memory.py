"""A Redis that ran out of memory (``maxmemory`` with ``noeviction``): pushes are refused
with a typed error naming the cause and the fix, and the consumers can still drain the
objects (claims, acks, nacks to the dead letters, pops, reaps, a worker that starts now)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis

from lazily_queue import connect
from lazily_queue.brokers import BrokerError, BrokerOutOfMemory, IncompatibleBrokerObject
from lazily_queue.brokers.servers import BrokerServer, NatsServer, RedisServer

from .conftest import _server, fresh


@pytest.fixture(scope="module")
def redis_server() -> Iterator[BrokerServer]:
    """A server of its own: these tests fill its memory."""
    yield from _server(RedisServer)


@pytest.fixture
async def full(redis_server: BrokerServer) -> AsyncIterator[aioredis.Redis]:
    """Lets the test fill the server: ``await limit()`` caps memory just above its use."""
    admin = aioredis.Redis.from_url(redis_server.url)
    await admin.config_set("maxmemory-policy", "noeviction")
    try:
        yield admin
    finally:
        await admin.config_set("maxmemory", 0)
        await admin.flushdb()
        await admin.aclose()


async def _fill(admin: aioredis.Redis, push: object) -> BrokerError:
    """Put the server past its memory limit (whatever clients connect or leave), then
    push once more: the error that push raised."""
    await admin.config_set("maxmemory", 1)
    try:
        await push("x" * 1000)  # type: ignore[operator]
    except BrokerError as exc:
        return exc
    raise AssertionError("a push past maxmemory was stored")


async def test_a_push_past_maxmemory_is_a_typed_error_naming_the_fix(
    redis_server: BrokerServer, full: aioredis.Redis
) -> None:
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(fresh("oom"), visibility_timeout=30, max_deliveries=3)
        await jobs.push("first")
        error = await _fill(full, jobs.push)
        assert isinstance(error, BrokerOutOfMemory)
        assert "maxmemory" in str(error) and "redis at" in str(error)
        assert "consume" in str(error)


async def test_workers_drain_a_work_queue_when_redis_is_out_of_memory(
    redis_server: BrokerServer, full: aioredis.Redis
) -> None:
    name = fresh("oom")
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=0.2, max_deliveries=2)
        await jobs.push("first")
        await jobs.push("second")
        await jobs.push("third")
        await _fill(full, jobs.push)
    # a worker that starts now declares the existing queue and claims from it
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=0.2, max_deliveries=2)
        first = await jobs.claim("w1", timeout=5)
        assert first is not None and first.value == "first"
        await jobs.ack("w1", first.delivery_id)
        second = await jobs.claim("w1", timeout=5)
        assert second is not None and second.value == "second"
        await jobs.nack("w1", second.delivery_id)
        again = await jobs.claim("w1", timeout=5)
        assert again is not None and again.item_id == second.item_id
        await jobs.nack("w1", again.delivery_id)  # its last delivery: to the dead letters
        await jobs.storage.sync()  # type: ignore[attr-defined]
        assert jobs.storage.dead_letter_len() == 1
        leased = await jobs.claim("w2", timeout=5)
        assert leased is not None
        await asyncio.sleep(0.3)  # the lease expires: a reap takes it back
        assert await jobs.reap_expired() == 1


async def test_a_topic_and_a_queue_drain_when_redis_is_out_of_memory(
    redis_server: BrokerServer, full: aioredis.Redis
) -> None:
    qname, tname = fresh("oomq"), fresh("oomt")
    async with connect(redis_server.url) as client:
        queue = client.queue(qname)
        topic = client.topic(tname)
        await topic.subscribe("s")
        await queue.push("head")
        await topic.publish("news")
        await _fill(full, queue.push)
    async with connect(redis_server.url) as client:
        queue = client.queue(qname)
        assert await queue.pop(timeout=5) == "head"
        topic = client.topic(tname)
        await topic.storage.declare()  # type: ignore[attr-defined]
        assert (await topic.storage.poll("s")).result == "news"


class SmallNatsServer(NatsServer):
    """JetStream with 1 MB of file storage."""

    def command(self) -> list[str]:
        config = self.directory / "nats.conf"
        config.write_text(f"listen: 127.0.0.1:{self.port}\n"
                          f'jetstream {{ store_dir: "{self.directory / "js"}", '
                          "max_file_store: 1MB, max_memory_store: 1MB }\n")
        return [self.path, "-c", str(config)]


@pytest.fixture(scope="module")
def small_nats() -> Iterator[BrokerServer]:
    yield from _server(SmallNatsServer)


async def test_a_push_to_a_full_jetstream_names_the_fix_and_workers_drain_it(
    small_nats: BrokerServer,
) -> None:
    async with connect(small_nats.url) as client:
        jobs = client.work_queue(fresh("full"), visibility_timeout=30)
        for _ in range(1000):
            try:
                await jobs.push("x" * 10_000)
            except BrokerError as exc:
                error = exc
                break
        else:
            raise AssertionError("JetStream stored 10 MB in 1 MB")
        assert isinstance(error, BrokerOutOfMemory)
        assert "max_file_store" in str(error) and "consume" in str(error)
        delivery = await jobs.claim("w", timeout=5)
        await jobs.ack("w", delivery.delivery_id)
        await jobs.push("fits again")


async def _limit_stream_bytes(url: str, stream: str, max_bytes: int) -> None:
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    config = (await js.stream_info(stream)).config
    config.max_bytes = max_bytes
    await js.update_stream(config)
    await nc.close()


async def test_a_queue_stream_full_by_its_own_byte_limit_refuses_pushes_naming_it(
    nats_server: BrokerServer,
) -> None:
    """A queue's stream whose ``max_bytes`` an operator set (it discards new messages):
    the push of an unbounded queue took the refusal for its capacity and waited for room
    forever."""
    async with connect(nats_server.url) as client:
        queue = client.queue(fresh("bytes"))
        await queue.push("head")
        await _limit_stream_bytes(nats_server.url, queue.storage.stream,  # type: ignore[attr-defined]
                                  20_000)
        with pytest.raises(BrokerOutOfMemory, match=r"maximum bytes exceeded.*consume.*max_bytes"):
            for _ in range(100):
                await asyncio.wait_for(queue.push("x" * 1000), 10)
        assert await queue.pop(timeout=5) == "head"
        await queue.push("fits again")


async def test_a_work_queue_stream_limited_to_discard_its_oldest_items_is_refused(
    nats_server: BrokerServer,
) -> None:
    """An operator's ``max_bytes`` on a work queue's stream, which discards old messages
    by default: pushes deleted the oldest pending items silently. The work queue is
    refused where it is opened until the stream refuses new messages instead."""
    import nats
    from nats.js.api import DiscardPolicy

    name = fresh("wbytes")
    async with connect(nats_server.url) as client:
        jobs = client.work_queue(name)
        await jobs.push("first")
        stream = jobs.storage.stream  # type: ignore[attr-defined]
        await _limit_stream_bytes(nats_server.url, stream, 20_000)
    async with connect(nats_server.url) as client:
        with pytest.raises(IncompatibleBrokerObject,
                           match=rf"stream {stream} has max_bytes 20000 .*--discard new"):
            await client.work_queue(name).push("second")
    nc = await nats.connect(nats_server.url)
    config = (await nc.jetstream().stream_info(stream)).config
    config.discard = DiscardPolicy.NEW
    await nc.jetstream().update_stream(config)
    await nc.close()
    async with connect(nats_server.url) as client:
        jobs = client.work_queue(name)
        with pytest.raises(BrokerOutOfMemory, match="maximum bytes exceeded"):
            for _ in range(100):
                await asyncio.wait_for(jobs.push("x" * 1000), 10)
        delivery = await jobs.claim("w", timeout=5)
        assert delivery.value == "first"


async def test_a_limit_set_on_the_stream_of_an_open_work_queue_refuses_its_next_push(
    nats_server: BrokerServer,
) -> None:
    """An operator's ``max_msgs`` on the stream of a work queue a process has open (it
    discards old messages by default): that process's pushes made the server delete its
    oldest items silently. Once the server announces the change the stream is checked
    again, as where it is opened, until it refuses new messages instead."""
    import nats
    from nats.js.api import DiscardPolicy

    async with connect(nats_server.url) as client:
        jobs = client.work_queue(fresh("wlimit"))
        await jobs.push("first")
        stream = jobs.storage.stream  # type: ignore[attr-defined]
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        config = (await js.stream_info(stream)).config
        config.max_msgs = 2
        await js.update_stream(config)
        await asyncio.sleep(0.5)  # the server's announcement reaches the client
        with pytest.raises(IncompatibleBrokerObject,
                           match=rf"stream {stream} has max_msgs 2 .*--discard new"):
            await jobs.push("second")
        config.discard = DiscardPolicy.NEW
        await js.update_stream(config)
        await nc.close()
        await asyncio.sleep(0.5)
        await jobs.push("second")
        with pytest.raises(BrokerOutOfMemory, match="maximum messages exceeded"):
            await jobs.push("third")
        assert (await jobs.claim("w", timeout=5)).value == "first"


async def test_a_redis_that_evicts_any_key_at_its_maxmemory_is_refused_at_connect(
    redis_server: BrokerServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """A cache's settings (``maxmemory`` with ``allkeys-lru``) would drop queued
    elements silently; ``volatile-lru`` evicts only the keys remembering msg_ids (a
    warning), and without ``maxmemory`` nothing is evicted."""
    admin = aioredis.Redis.from_url(redis_server.url)
    try:
        await admin.config_set("maxmemory-policy", "allkeys-lru")
        await admin.config_set("maxmemory", 100 * 1024 * 1024)
        with pytest.raises(IncompatibleBrokerObject,
                           match=r"evicts keys .*allkeys-lru.*set maxmemory-policy noeviction"):
            async with connect(redis_server.url):
                pass
        await admin.config_set("maxmemory-policy", "volatile-lru")
        async with connect(redis_server.url) as client:
            await client.queue(fresh("volatile")).push("kept")
        warned = [r.getMessage() for r in caplog.records if "volatile-lru" in r.getMessage()]
        assert len(warned) == 1 and "msg_ids may go before their window ends" in warned[0]
        await admin.config_set("maxmemory-policy", "allkeys-lru")
        await admin.config_set("maxmemory", 0)
        async with connect(redis_server.url) as client:
            await client.queue(fresh("unlimited")).push("kept")
    finally:
        await admin.config_set("maxmemory-policy", "noeviction")
        await admin.config_set("maxmemory", 0)
        await admin.aclose()


async def test_a_redis_user_that_may_not_read_the_config_connects_with_one_warning(
    redis_server: BrokerServer, caplog: pytest.LogCaptureFixture,
) -> None:
    admin = aioredis.Redis.from_url(redis_server.url)
    await admin.acl_setuser("noconfig", enabled=True, passwords=["+secret-of-noconfig"],
                            keys=["*"], channels=["*"], commands=["+@all", "-config"])
    url = redis_server.url.replace("redis://", "redis://noconfig:secret-of-noconfig@")
    try:
        async with connect(url) as client:
            await client.queue(fresh("noconfig")).push("kept")
    finally:
        await admin.acl_deluser("noconfig")
        await admin.aclose()
    warned = [r.getMessage() for r in caplog.records if "maxmemory-policy" in r.getMessage()]
    assert len(warned) == 1 and "never evicts keys" in warned[0]


async def test_an_open_queue_whose_stream_is_set_to_delete_its_elements_refuses_its_next_push(
    nats_server: BrokerServer,
) -> None:
    """An operator's limit with ``discard: old``, or an age limit, on the stream of a queue
    a process has open: the server would delete its elements silently. Once the server
    announces the change the stream is checked again, as where the queue is opened, and
    the queue refuses its next operation; a work queue's stream with an age limit is
    refused too, whatever its discard policy."""
    import nats
    from nats.js.api import DiscardPolicy

    async with connect(nats_server.url) as client:
        orders = client.queue(fresh("qlimit"))
        await orders.push("first")
        stream = orders.storage.stream  # type: ignore[attr-defined]
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        config = (await js.stream_info(stream)).config
        config.max_bytes, config.discard = 20_000, DiscardPolicy.OLD
        await js.update_stream(config)
        await asyncio.sleep(0.5)  # the server's announcement reaches the client
        with pytest.raises(IncompatibleBrokerObject,
                           match=rf"stream {stream} has max_bytes 20000 .*--discard new"):
            await orders.push("second")
        config.discard, config.max_age = DiscardPolicy.NEW, 3600
        await js.update_stream(config)
        await asyncio.sleep(0.5)
        with pytest.raises(IncompatibleBrokerObject,
                           match=rf"stream {stream} has max_age 3600s, .*remove the limit"):
            await orders.pop()
        config.max_age = 0
        await js.update_stream(config)
        await asyncio.sleep(0.5)
        await orders.push("second")
        assert await orders.pop() == "first"
        jobs = client.work_queue(fresh("wage"))
        await jobs.push("job")
        work = jobs.storage.stream  # type: ignore[attr-defined]
        config = (await js.stream_info(work)).config
        config.max_age, config.discard = 3600, DiscardPolicy.NEW
        await js.update_stream(config)
        await nc.close()
        await asyncio.sleep(0.5)
        with pytest.raises(IncompatibleBrokerObject, match=rf"stream {work} has max_age 3600s"):
            await jobs.claim("w", timeout=5)
