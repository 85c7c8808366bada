"""Exactly-once producers on the brokers: a ``msg_id`` pushed again, from any
connection, applies nothing while it is in the broker's window."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import QueueCell, QueuePushError, TopicCell, WorkQueueCell
from lazily_queue.client.brokers import open_provider

from .conftest import fresh

#: Ids no header or key could hold as they are.
AWKWARD = ["line\r\nbreak", "ünïcødé ✓", "x" * 256, "Nats-Msg-Id: 1"]


async def test_a_repeat_from_another_connection_after_the_pop_applies_nothing(
        broker_url: str) -> None:
    name = fresh("once")
    first = await open_provider(broker_url, poll_interval=0.2)
    second = await open_provider(broker_url, poll_interval=0.2)
    try:
        producer: QueueCell[Any] = QueueCell(first.queue(name))
        retrier: QueueCell[Any] = QueueCell(second.queue(name))
        for msg_id in AWKWARD:
            assert await producer.offer(msg_id, msg_id=msg_id) is None
        assert await producer.poll_many(10) == AWKWARD
        for msg_id in AWKWARD:
            assert await retrier.offer("again", msg_id=msg_id) is None
        assert await retrier.offer("new", msg_id="new") is None
        assert await retrier.poll_many(10) == ["new"]
    finally:
        await first.close()
        await second.close()


async def test_a_closed_queue_answers_repeats_and_stores_nothing(provider: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("once-closed")))
    assert await q.offer("a", msg_id="a") is None
    await q.close()
    assert await q.offer("a", msg_id="a") is None
    assert await q.offer("b", msg_id="b") is QueuePushError.Closed
    assert await q.offer("b", msg_id="b") is QueuePushError.Closed
    assert await q.poll_many(10) == ["a"]
    await q.storage.sync()  # type: ignore[attr-defined]
    assert q.len() == 0


async def test_topic_and_work_queue_repeats_return_the_first_result(provider: Any) -> None:
    topic: TopicCell[Any] = TopicCell(provider.topic(fresh("once-topic")))
    await topic.subscribe("s")
    first = await topic.publish("a", msg_id="m")
    assert await topic.publish("other", msg_id="m") == first
    assert await topic.publish("b") == first + 1
    assert [await topic.advance("s", timeout=10) for _ in range(2)] == ["a", "b"]
    assert await topic.poll("s") is None

    work = WorkQueueCell(provider.work_queue(fresh("once-work"), visibility_timeout=30.0,
                                             max_deliveries=3))
    item = await work.push("job", msg_id="j")
    assert await work.push("job", msg_id="j") == item
    delivery = await work.claim("w", timeout=10)
    assert delivery.item_id == item
    await work.ack("w", delivery.delivery_id)
    assert await work.push("job", msg_id="j") == item
    assert await work.poll("w") is None


async def test_a_ttl_is_refused_by_name_and_nothing_is_stored(provider: Any) -> None:
    from lazily_queue import UnsupportedOperation

    q: QueueCell[Any] = QueueCell(provider.queue(fresh("ttl")))
    jobs = WorkQueueCell(provider.work_queue(fresh("ttl-jobs"), visibility_timeout=30.0,
                                             max_deliveries=3))
    news: TopicCell[Any] = TopicCell(provider.topic(fresh("ttl-news")))
    backend = type(q.storage).__name__
    with pytest.raises(UnsupportedOperation, match=f"{backend} has no message expiry"):
        await q.push("a", ttl=5.0)
    with pytest.raises(UnsupportedOperation, match="no message expiry"):
        await jobs.push("a", ttl=5.0)
    with pytest.raises(UnsupportedOperation,
                       match=f"{type(news.storage).__name__} has no message expiry"):
        await news.publish("a", ttl=5.0)
    # Nothing was stored by the refused pushes (the plain ones wait for the declarations).
    await q.offer("plain")
    await jobs.push("plain")
    await news.publish("plain")
    assert await q.poll_many(5) == ["plain"]
    assert (await jobs.claim("w", timeout=10.0)).value == "plain"
