"""A topic cell does not keep the reader of every subscriber id it ever saw: subscribers
that come and go (an ephemeral id per dashboard) leave no reader behind once nothing
uses it, while a reader still in use stays the id's one reader and keeps updating."""

from __future__ import annotations

import gc
import weakref

import pytest

from lazily_queue import TopicCell, testing
from lazily_queue.reactive import Context, Effect


@pytest.fixture
def ctx() -> Context:
    return Context(name="reader-churn")


async def _come_and_go(topic: TopicCell[int], ids: range) -> None:
    for k in ids:
        await topic.subscribe(f"dash-{k}", "ephemeral")
        await topic.publish(k)
        assert topic.reader(f"dash-{k}")() == [k]
        await topic.disconnect(f"dash-{k}")


async def test_readers_of_subscribers_that_left_go_once_unused(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    await _come_and_go(topic, range(1))
    first = weakref.ref(topic.reader("dash-0"))
    await _come_and_go(topic, range(1, 1_000))
    gc.collect()
    assert first() is None
    assert len(topic._readers) < 200  # about twice those the topic knows, at least 64


async def test_a_reader_in_use_of_a_subscriber_that_left_keeps_updating(
    ctx: Context,
) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    held = topic.reader("dash-x")
    seen: list[object] = []
    effect = Effect(lambda: seen.append(held()), context=ctx)
    await topic.subscribe("dash-x", "ephemeral")
    await topic.disconnect("dash-x")
    await _come_and_go(topic, range(500))
    gc.collect()
    assert topic.reader("dash-x") is held
    await topic.subscribe("dash-x", "ephemeral")
    await topic.publish(7)
    assert held() == [7] and seen[-1] == [7]
    await topic.disconnect("dash-x")
    await _come_and_go(topic, range(500, 1_000))
    await topic.subscribe("dash-x", "ephemeral")  # while held weakly: still updated
    await topic.publish(8)
    assert seen[-1] == [8]
    effect.dispose()


@pytest.mark.timeout(60)
async def test_a_node_topic_lets_readers_of_subscribers_that_left_go() -> None:
    async with testing.cluster(1) as c:
        topic = c.node(1).topic("prices")
        await _come_and_go(topic, range(1))
        first = weakref.ref(topic.reader("dash-0"))
        await _come_and_go(topic, range(1, 300))
        gc.collect()
        assert first() is None


@pytest.mark.timeout(60)
async def test_a_node_topic_storage_does_not_keep_every_id_that_came_and_went() -> None:
    async with testing.cluster(1) as c:
        topic = c.node(1).topic("prices")
        await topic.subscribe("stays", "durable")
        await _come_and_go(topic, range(300))
        known: set[str] = topic.storage._ids  # type: ignore[attr-defined]
        assert "stays" in known and len(known) <= 2 * 1 + 64 + 1
