"""NATS consumers have no ``max_ack_pending`` limit (JetStream's default is 1000; with
it reached and more messages ready a pull is never answered): a work queue hands out
any number of leases, a pop and a topic's advance take any number of elements, and a
consumer declared with a limit (by an earlier version) is lifted of it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from lazily_queue import QueueCell, TopicCell, WorkQueueCell
from lazily_queue.brokers.nats_work import CONSUMER
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider

from .conftest import fresh

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def provider(nats_server: BrokerServer) -> AsyncIterator[Any]:
    """A NATS provider whose requests time out after 2 s (a pull left unanswered
    fails fast)."""
    backend = await open_provider(nats_server.url, poll_interval=0.2, view_limit=100,
                                  timeout=2)
    try:
        yield backend
    finally:
        await backend.close()


async def test_a_claim_with_more_leases_out_than_the_default_limit_takes_what_is_ready(
        provider: Any) -> None:
    jobs = WorkQueueCell(provider.work_queue(fresh("leases"), visibility_timeout=60,
                                             max_deliveries=3))
    for start in range(0, 1001, 250):
        await asyncio.gather(*(jobs.push(v) for v in range(start, min(start + 250, 1001))))
    leased = await jobs.claim_many("w", 1000, timeout=10)
    assert len(leased) == 1000
    (last,) = await jobs.claim_many("w", 1, timeout=0)
    assert last.value not in {d.value for d in leased}


async def test_a_consumer_declared_with_an_ack_pending_limit_is_lifted_of_it(
        provider: Any) -> None:
    name = fresh("limited")
    storage = provider.work_queue(name, visibility_timeout=60, max_deliveries=3)
    jobs = WorkQueueCell(storage)
    await jobs.push("first")  # declares the stream and its consumer
    await provider.js.add_consumer(storage.stream, ConsumerConfig(
        durable_name=CONSUMER, ack_policy=AckPolicy.EXPLICIT, ack_wait=60, max_deliver=4,
        max_ack_pending=1))
    again = WorkQueueCell(provider.work_queue(name, visibility_timeout=60, max_deliveries=3))
    await again.push("second")
    assert (await provider.js.consumer_info(storage.stream, CONSUMER)
            ).config.max_ack_pending == -1
    leased = await again.claim_many("w", 2, timeout=10)
    assert sorted(d.value for d in leased) == ["first", "second"]


async def test_a_pop_of_more_than_the_default_limit_takes_them_all(provider: Any) -> None:
    items = QueueCell(provider.queue(fresh("many")))
    for start in range(0, 1500, 250):
        await asyncio.gather(*(items.push(v) for v in range(start, start + 250)))
    assert await items.pop_many(1500, timeout=0) == list(range(1500))


async def test_a_topic_advance_of_more_than_the_default_limit_is_answered(
        provider: Any) -> None:
    storage = provider.topic(fresh("many"))
    news: TopicCell[Any] = TopicCell(storage)
    await news.subscribe("s")
    await news.publish_many(range(1500))
    await storage.sync()
    assert (await storage.advance_to("s", 1500)).result == 1500
