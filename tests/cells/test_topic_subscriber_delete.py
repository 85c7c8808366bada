"""``TopicCell.delete_subscriber`` on the local and the replicated backends: a durable
subscriber nobody reads any more is forgotten, releasing the elements it held back and
its place under ``max_subscribers``; the name subscribes again as a new subscriber."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    InvalidName,
    TooManySubscribers,
    TopicCell,
    UnsupportedOperation,
    testing,
)
from lazily_queue.names import MAX_NAME_LENGTH
from lazily_queue.storage.capabilities import StorageCapabilities
from lazily_queue.storage.local_topic import LocalTopicStorage

pytestmark = pytest.mark.timeout(60)

Opener = Callable[[], TopicCell[Any]]


@asynccontextmanager
async def _backend(kind: str) -> AsyncIterator[Opener]:
    if kind == "local":
        yield lambda: TopicCell(name="t")
        return
    async with testing.cluster(1, max_subscribers=2) as c:
        node = await c.leader()
        yield lambda: node.topic("t")


@pytest.mark.parametrize("kind", ["local", "raft1"])
async def test_deleting_an_abandoned_durable_subscriber_releases_what_it_held(
        kind: str) -> None:
    async with _backend(kind) as open_topic:
        t = open_topic()
        await t.subscribe("gone")
        await t.subscribe("live")
        for v in ("a", "b"):
            await t.publish(v)
        assert await t.poll("live") == "a" and await t.poll("live") == "b"
        await t.disconnect("gone")
        assert await t.gc() == 0  # the offline durable cursor holds a and b
        reader = t.reader("gone")
        assert reader() is None
        await t.reconnect("gone")
        assert reader() == ["a", "b"]
        assert await t.delete_subscriber("gone") is True
        assert reader() is None  # its reader was told
        assert sorted(t.subscriptions()) == ["live"]
        assert await t.gc() == 2
        await t.publish("c")
        await t.subscribe("gone")  # a new subscriber at the tail
        assert reader() == []
        assert t.subscriptions()["gone"]["cursor"] == 3
        assert await t.delete_subscriber("nobody") is False


async def test_a_deleted_subscriber_frees_its_slot_under_max_subscribers() -> None:
    async with _backend("raft1") as open_topic:
        t = open_topic()
        await t.subscribe("a")
        await t.subscribe("b")
        await t.disconnect("a")
        with pytest.raises(TooManySubscribers, match="delete_subscriber"):
            await t.subscribe("c")
        assert await t.delete_subscriber("a") is True
        await t.subscribe("c")
        assert sorted(t.subscriptions()) == ["b", "c"]


@pytest.mark.parametrize("kind", ["local", "raft1"])
async def test_deleting_checks_the_name_rule(kind: str) -> None:
    async with _backend(kind) as open_topic:
        t = open_topic()
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await t.delete_subscriber("s" * (MAX_NAME_LENGTH + 1))
        with pytest.raises(TypeError, match="subscriber id must be a str"):
            await t.delete_subscriber(7)  # type: ignore[arg-type]


def test_the_synchronous_twin_and_a_backend_without_the_capability() -> None:
    t: TopicCell[str] = TopicCell(name="t")
    t.try_subscribe("s")
    t.try_publish("x")
    assert t.try_delete_subscriber("s") is True
    assert t.try_delete_subscriber("s") is False
    assert t.try_gc() == 1

    class Plain(LocalTopicStorage[str]):
        capabilities = StorageCapabilities(sync=True)

    plain: TopicCell[str] = TopicCell(Plain(), name="plain")
    with pytest.raises(UnsupportedOperation, match="subscriber_delete"):
        plain.try_delete_subscriber("s")
