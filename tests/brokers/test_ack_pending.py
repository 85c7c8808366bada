"""NATS consumers have no ``max_ack_pending`` limit (JetStream's default is 1000; with
it reached and more messages ready a pull is never answered): a work queue hands out
any number of leases, a pop and a topic's advance take any number of elements, and a
consumer declared with a limit (by an earlier version) is lifted of it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from lazily_queue import QueueCell, TopicCell, WorkQueueCell
from lazily_queue.brokers import SubscriberConsumerLost
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


async def _old_subscriber(provider: Any, subscriber: str) -> tuple[Any, str]:
    """A topic with ``subscriber``'s consumer as an earlier version declared it: the
    server's default ``max_ack_pending``, and 1500 elements it has not read."""
    storage = provider.topic(fresh("old"))
    await storage.declare()
    consumer = f"s_{subscriber}"
    description = json.dumps({"id": subscriber, "durability": "durable", "connected": True})
    await provider.js.add_consumer(storage.stream, ConsumerConfig(
        durable_name=consumer, description=description, ack_policy=AckPolicy.ALL,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=1,
        sample_freq="100%"))
    assert (await provider.js.consumer_info(storage.stream, consumer)
            ).config.max_ack_pending == 1000
    await TopicCell(storage).publish_many(range(1500))
    await storage.sync()
    return storage, consumer


async def test_a_subscriber_declared_with_an_ack_pending_limit_is_lifted_of_it(
        provider: Any) -> None:
    storage, consumer = await _old_subscriber(provider, "s")
    assert (await storage.advance_to("s", 1500)).result == 1500
    info = await provider.js.consumer_info(storage.stream, consumer)
    assert info.config.max_ack_pending == -1
    assert json.loads(info.config.description) == {
        "id": "s", "durability": "durable", "connected": True}
    await storage.sync()
    assert storage.subscriptions() == {
        "s": {"durability": "durable", "connected": True, "cursor": 1500}}


async def test_a_subscriber_s_limit_is_lifted_once(
        provider: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, _ = await _old_subscriber(provider, "s")
    assert (await storage.poll("s")).result == 0
    await storage.sync()
    requests: list[str] = []

    async def consumer_request(stream: str, *args: Any, **kwargs: Any) -> Any:
        requests.append(stream)
        raise AssertionError("a lifted consumer is neither read nor updated again")

    # (a pull slow to get its first answer may look the consumer up: not a lift)
    monkeypatch.setattr(storage, "_lift", consumer_request)
    monkeypatch.setattr(provider.js, "add_consumer", consumer_request)
    assert [(await storage.poll("s")).result for _ in range(3)] == [1, 2, 3]
    assert (await storage.advance_to("s", 1500)).result == 1500
    assert requests == []


async def test_lifting_the_limit_of_a_consumer_deleted_meanwhile_creates_nothing(
        provider: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """JetStream 2.9's update is a create when the consumer is gone: the advance raises
    SubscriberConsumerLost and leaves no consumer (one made again at the first start
    would replay the subscriber's elements from there)."""
    storage, consumer = await _old_subscriber(provider, "s")
    assert (await storage.poll("s")).result == 0  # lifted, then limited again below
    await provider.js.add_consumer(storage.stream, dataclasses.replace(
        (await provider.js.consumer_info(storage.stream, consumer)).config,
        max_ack_pending=1000))
    await storage.sync()
    read = provider.js.consumer_info

    async def read_then_deleted(stream: str, name: str, *args: Any, **kwargs: Any) -> Any:
        info = await read(stream, name, *args, **kwargs)
        monkeypatch.setattr(provider.js, "consumer_info", read)
        await provider.js.delete_consumer(stream, name)  # outside, just after the read
        return info

    monkeypatch.setattr(provider.js, "consumer_info", read_then_deleted)
    with pytest.raises(SubscriberConsumerLost, match="'s'"):
        await storage.poll("s")
    assert [c.name for c in await provider.js.consumers_info(storage.stream)] == []
