"""An operator's change to a broker made while a process has its objects open, under
which the server would delete elements silently, is noticed without opening the
objects again: a NATS stream changed while the process was disconnected (the server's
announcement of it missed) is checked again once the connection is back, and a Redis
set to evict keys after the process connected is read again within a bounded time."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from lazily_queue import connect
from lazily_queue.brokers import IncompatibleBrokerObject
from lazily_queue.brokers.redis_eviction import CHECK_INTERVAL
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.reactive import wait_until

from .conftest import fresh
from .link_cutter import LinkCutter, wait_for

pytestmark = pytest.mark.timeout(60)


async def test_a_stream_changed_while_the_process_was_disconnected_is_refused_once_back(
    nats_server: BrokerServer,
) -> None:
    """The limits are set through a second connection while the process's own is cut:
    the server's announcement reaches no one there. Once the connection is back, the
    next push, pop and claim raise the error an open would have raised; once the
    limits are lifted, the queue works again and kept its element."""
    import nats
    from nats.js.api import DiscardPolicy

    async with LinkCutter(nats_server.port) as link, \
            connect(link.url, poll_interval=0.2, timeout=3) as client:
        orders = client.queue(fresh("qcut"))
        await orders.push("first")
        jobs = client.work_queue(fresh("wcut"), visibility_timeout=30, max_deliveries=3)
        await jobs.push("job")
        nc = orders.storage._backend.nc  # type: ignore[attr-defined]
        link.cut()
        await wait_for(lambda: not nc.is_connected, "the client to notice the cut")
        admin = await nats.connect(nats_server.url)
        try:
            js = admin.jetstream()
            stream = orders.storage.stream  # type: ignore[attr-defined]
            config = (await js.stream_info(stream)).config
            config.max_bytes, config.discard = 20_000, DiscardPolicy.OLD
            await js.update_stream(config)
            work = jobs.storage.stream  # type: ignore[attr-defined]
            work_config = (await js.stream_info(work)).config
            work_config.max_age = 3600
            await js.update_stream(work_config)
            await asyncio.sleep(0.3)  # the announcements went out, to no one here
            link.mend()
            await wait_for(lambda: nc.is_connected, "the client to reconnect")
            with pytest.raises(IncompatibleBrokerObject,
                               match=rf"stream {stream} has max_bytes 20000 .*--discard new"):
                await orders.push("second")
            with pytest.raises(IncompatibleBrokerObject, match=rf"stream {stream} has"):
                await orders.pop()
            with pytest.raises(IncompatibleBrokerObject,
                               match=rf"stream {work} has max_age 3600s, .*remove the limit"):
                await jobs.claim("w", timeout=5)
            config.max_bytes = -1
            await js.update_stream(config)
            await asyncio.sleep(0.5)  # announced: checked again
            await orders.push("second")
            assert await orders.pop() == "first"
        finally:
            await admin.close()



async def test_a_consumer_deleted_while_the_process_was_disconnected_voids_its_leases(
    nats_server: BrokerServer,
) -> None:
    """The work queue is declared again once the connection is back; its consumer gone
    meanwhile (deleted by an operator), the one added anew holds none of this process's
    leases: an ack of one is refused, and the item is delivered again."""
    import nats

    from lazily_queue import SettlementRejected

    async with LinkCutter(nats_server.port) as link, \
            connect(link.url, poll_interval=0.2, timeout=3) as client:
        jobs = client.work_queue(fresh("wvoid"), visibility_timeout=30, max_deliveries=3)
        await jobs.push("job")
        delivery = await jobs.claim("w", timeout=5)
        nc = jobs.storage._backend.nc  # type: ignore[attr-defined]
        link.cut()
        await wait_for(lambda: not nc.is_connected, "the client to notice the cut")
        admin = await nats.connect(nats_server.url)
        try:
            await admin.jetstream().delete_consumer(
                jobs.storage.stream, "lq")  # type: ignore[attr-defined]
        finally:
            await admin.close()
        link.mend()
        await wait_for(lambda: nc.is_connected, "the client to reconnect")
        await jobs.storage.sync()  # type: ignore[attr-defined]
        with pytest.raises(SettlementRejected):
            await jobs.ack("w", delivery.delivery_id)
        again = await jobs.claim("w", timeout=5)
        assert again.value == "job"
        await jobs.ack("w", again.delivery_id)


async def test_a_redis_set_to_evict_keys_after_connect_refuses_the_objects_soon(
    redis_server: BrokerServer,
) -> None:
    """``CONFIG SET maxmemory-policy allkeys-lru`` (with a ``maxmemory``) after the
    process connected: within :data:`CHECK_INTERVAL` seconds and a poll interval the
    objects refuse their operations (a waiting pop wakes with the error) as a connect
    is refused; once the policy is ``noeviction`` again they work, nothing lost."""
    admin = aioredis.Redis.from_url(redis_server.url)
    try:
        async with connect(redis_server.url, poll_interval=0.2) as client:
            orders = client.queue(fresh("evict"))
            await orders.push("first")
            empty = client.queue(fresh("evict-empty"))
            jobs = client.work_queue(fresh("evict-jobs"), visibility_timeout=60)
            await jobs.push("job")
            leased = await jobs.claim("w")
            waiting = asyncio.ensure_future(empty.pop(timeout=30))
            await asyncio.sleep(0.3)
            await admin.config_set("maxmemory", 100 * 1024 * 1024)
            await admin.config_set("maxmemory-policy", "allkeys-lru")
            with pytest.raises(IncompatibleBrokerObject, match=r"evicts keys .*allkeys-lru"):
                async with asyncio.timeout(CHECK_INTERVAL + 3):
                    await waiting
            with pytest.raises(IncompatibleBrokerObject,
                               match=r"allkeys-lru.*set maxmemory-policy noeviction"):
                await orders.push("second")
            with pytest.raises(IncompatibleBrokerObject):
                await orders.pop()
            with pytest.raises(IncompatibleBrokerObject):
                await jobs.push("refused")
            # a lease made before is settled still, so its item does not come back
            assert (await jobs.ack("w", leased.delivery_id)).outcome == "acked"
            await admin.config_set("maxmemory-policy", "noeviction")
            await asyncio.sleep(CHECK_INTERVAL + 0.5)
            await orders.push("second")
            assert await orders.pop() == "first"
            # the server holds the job settled: none in flight, none pending
            await wait_until(lambda: not jobs.in_flight_len() and not jobs.pending_len(),
                             context=jobs.ctx, timeout=5)
    finally:
        await admin.config_set("maxmemory-policy", "noeviction")
        await admin.config_set("maxmemory", 0)
        await admin.aclose()
