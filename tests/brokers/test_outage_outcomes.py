"""Calls made while the broker is gone fail and stay failed: nothing a call raised for
is applied once the broker is back, and the calls made after it is back succeed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from lazily_queue import QueueCell, connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import NatsServer, RedisServer, find_binary

from .conftest import fresh

needs_nats = pytest.mark.skipif(find_binary("nats-server") is None,
                                reason="nats-server is not installed")


@needs_nats
async def test_a_nats_push_that_failed_during_an_outage_is_not_stored_later() -> None:
    """nats-py buffers what is published while it reconnects and sends it once the
    server is back: a push that raised BrokerUnavailable was then stored anyway (a retry
    by the producer made it twice). It must stay not stored, and fail in about the
    client's timeout."""
    async with NatsServer() as server:
        async with connect(server.url, timeout=1.0) as client:
            q: QueueCell[Any] = client.queue(fresh("outage"))
            await q.push("warm-up")
            assert await q.pop() == "warm-up"
            await server.stop(kill=True)
            await asyncio.sleep(0.3)
            started = time.monotonic()
            with pytest.raises(BrokerUnavailable):
                await asyncio.wait_for(q.push("failed"), 30)
            assert time.monotonic() - started < 5
            await server.start()
            await asyncio.wait_for(q.push("after"), 30)  # waits for the reconnection
            await asyncio.sleep(0.5)
            await q.storage.sync()
            assert q.len() == 1
            assert await q.pop(timeout=5) == "after"


@pytest.mark.skipif(find_binary("redis-server") is None,
                    reason="redis-server is not installed")
async def test_calls_after_a_redis_restart_succeed_on_fresh_connections() -> None:
    """The pool's connections closed by a restart are reconnected before use: a claim
    made once the server is back does not fail with 'Connection closed by server' (a
    deliveries() loop died of it while the server was up)."""
    async with RedisServer() as server:
        async with connect(server.url) as client:
            w = client.work_queue(fresh("restarted"))
            await asyncio.gather(*(w.push(i) for i in range(100)))  # several connections
            await server.restart()
            await asyncio.sleep(0.5)
            for i in range(6):
                delivery = await asyncio.wait_for(w.claim("worker"), 30)
                assert delivery.value == i
                await w.ack("worker", delivery.delivery_id)
