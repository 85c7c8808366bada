"""Topic retention by count and bytes (limits with overflow='drop_oldest') on the local
and the replicated backends alike: elements beyond it leave even when durable
subscribers have not read them; a subscriber behind continues at the first retained
element, its gap counted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    InvalidConfiguration,
    LimitExceeded,
    Limits,
    OffsetOutOfRange,
    TopicCell,
    testing,
)

Opener = Callable[..., TopicCell[Any]]
RETAIN_3 = Limits(max_length=3, overflow="drop_oldest")


@asynccontextmanager
async def _backend(kind: str) -> AsyncIterator[Opener]:
    if kind == "local":
        yield lambda name="t", **kw: TopicCell(name=name, **kw)
        return
    async with testing.cluster(1) as c:
        node = await c.leader()
        yield lambda name="t", **kw: node.topic(name, **kw)


@pytest.mark.parametrize("kind", ["local", "raft1"])
async def test_retention_drops_unread_elements_and_counts_the_gap(kind: str) -> None:
    async with _backend(kind) as open_topic:
        t = open_topic(limits=RETAIN_3)
        assert t.limits() == RETAIN_3
        await t.subscribe("slow")  # durable, never reads
        await t.subscribe("fast")
        for i in range(5):
            await t.publish(i)
            if i < 4:
                assert await t.advance("fast") == i
        assert t.elements() == [2, 3, 4] and t.base_offset() == 2
        assert t.dropped() == 2 and t.gap("slow") == 2 and t.gap("fast") == 0
        assert t.read_stream("slow") == [2, 3, 4]  # continues at the first retained one
        assert await t.advance("slow") == 2
        with pytest.raises(OffsetOutOfRange):
            await t.seek("slow", 0)
        assert t.retained_bytes() == 3


@pytest.mark.parametrize("kind", ["local", "raft1"])
async def test_retention_by_bytes_and_an_element_that_never_fits(kind: str) -> None:
    async with _backend(kind) as open_topic:
        t = open_topic(limits=Limits(max_bytes=6, overflow="drop_oldest"))
        await t.subscribe("s")
        for word in ("ab", "cd", "ef", "ghij"):
            await t.publish(word)
        assert t.elements() == ["ef", "ghij"] and t.dropped() == 2 and t.gap("s") == 2
        with pytest.raises(LimitExceeded) as refused:
            await t.publish("x" * 7)
        assert refused.value.limit == "max_bytes" and refused.value.value == 6
        assert refused.value.cell == "t" and "'t'" in str(refused.value)
        assert t.elements() == ["ef", "ghij"] and t.retained_bytes() == 6


async def test_a_topic_takes_the_same_limits_everywhere() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        t = node.topic("t", limits=RETAIN_3)
        await t.publish(1)
        with pytest.raises(InvalidConfiguration):
            node.topic("t", limits=Limits(max_length=4, overflow="drop_oldest"))
        other = node.topic("plain")
        await other.publish(1)
        assert other.limits() is None and other.dropped() == 0
