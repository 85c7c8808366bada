"""Replay by time: a topic subscriber starts at (or seeks to) the first retained element
enqueued at or after a timezone-aware datetime, on the local and replicated backends."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from lazily_queue import TopicCell, UnsupportedOperation, testing
from lazily_queue.core.stamps import StampIndex
from lazily_queue.core.timestamps import stamp_of_time
from lazily_queue.core.topic import TopicCore
from lazily_queue.errors import InvalidTimestamp
from lazily_queue.storage import LocalTopicStorage, StorageCapabilities
from lazily_queue.storage.topic import as_messages_topic
from tests.clock import FakeClock


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


async def test_a_time_start_picks_the_first_element_at_or_after_it_locally() -> None:
    clock = FakeClock()
    t: TopicCell[Any] = TopicCell(clock=clock)
    await t.subscribe("keep")
    for value, ms in (("a", 1_000_000), ("b", 1_000_500), ("c", 1_000_500), ("d", 1_002_000)):
        clock.now = ms / 1000
        await t.publish(value)
    await t.subscribe("exact", "ephemeral", start=at(1_000_500))
    await t.subscribe("between", "ephemeral", start=at(1_000_501))
    await t.subscribe("sub-ms", "ephemeral", start=at(1_000_000) + timedelta(microseconds=1))
    await t.subscribe("before", "ephemeral", start=at(1))
    await t.subscribe("after", "ephemeral", start=at(1_002_001))
    assert t.read_stream("exact") == ["b", "c", "d"]
    assert t.read_stream("between") == ["d"]
    assert t.read_stream("sub-ms") == ["b", "c", "d"]
    assert t.read_stream("before") == ["a", "b", "c", "d"]
    assert t.read_stream("after") == []
    # seek by time, backward and forward; the reader follows
    reader = t.reader("after")
    assert reader() == []
    assert await t.seek("after", at(1_000_000)) == 0
    assert reader() == ["a", "b", "c", "d"]
    assert t.try_seek("after", at(1_002_000)) == 3
    assert await t.seek("nobody", at(0)) is None
    # collected elements are out of reach: an early time starts at the head
    await t.poll("keep")
    await t.poll("keep")
    await t.gc()
    assert t.base_offset() == 2
    assert t.try_subscribe("late", start=at(1)) is not None
    assert t.read_stream("late") == ["c", "d"]


async def test_a_time_start_on_the_replicated_backend() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        t = leader.topic("t")
        await t.publish("a")
        stamps = as_messages_topic(t.storage)
        assert stamps is not None
        first = stamps.stamp_of(0)
        assert first > 0
        while int(time.time() * 1000) <= first:  # as the leader stamps: ms, rounded down
            pass  # wait for the clock to pass a's stamp (a condition, no sleep)
        await t.publish("b")
        assert stamps.stamp_of(1) > first
        await t.subscribe("from-b", start=at(stamps.stamp_of(1) + 1))
        assert t.read_stream("from-b") == []  # after every element: the tail
        await t.subscribe("from-a", start=at(first))
        await t.subscribe("after-a", start=at(first + 1))
        assert t.read_stream("from-a") == ["a", "b"]
        assert t.read_stream("after-a") == ["b"]
        assert await t.seek("from-b", at(1)) == 0
        await c.settle()
        for node in c.nodes.values():
            subs = node.topic("t").subscriptions()
            assert (subs["from-a"]["cursor"], subs["after-a"]["cursor"]) == (0, 1)
            assert subs["from-b"]["cursor"] == 0


@pytest.mark.parametrize("bad", [datetime(2024, 1, 1), date(2024, 1, 1), 1.5e9])
async def test_a_naive_or_untyped_time_is_refused_before_anything(bad: Any) -> None:
    t: TopicCell[Any] = TopicCell()
    await t.publish("a")
    await t.subscribe("s", start="head")
    with pytest.raises(InvalidTimestamp, match=r"timezone|datetime"):
        await t.subscribe("x", start=bad)
    with pytest.raises(InvalidTimestamp):
        await t.seek("s", bad)
    assert "x" not in t.subscriptions()
    assert t.subscriptions()["s"]["cursor"] == 0


def test_time_stamps_round_up_to_the_millisecond() -> None:
    assert stamp_of_time(at(1_500)) == 1_500
    assert stamp_of_time(at(1_500) + timedelta(microseconds=1)) == 1_501
    other = timezone(timedelta(hours=9))
    assert stamp_of_time(at(1_500).astimezone(other)) == 1_500
    with pytest.raises(InvalidTimestamp, match="naive"):
        stamp_of_time(datetime(2024, 1, 1))


def test_the_stamp_index_finds_the_first_id_at_or_after_a_stamp() -> None:
    index = StampIndex()
    index.note(2, 10)
    index.note(4, 30)
    index.note(6, 20)  # a new leader's clock behind: ids stay in order
    assert index.first_at_or_after(10, 0, 8) == 2  # ids 0..1 unknown (0)
    assert index.first_at_or_after(25, 0, 8) == 4
    assert index.first_at_or_after(20, 0, 8) == 4
    assert index.first_at_or_after(31, 0, 8) == 8
    assert index.first_at_or_after(0, 3, 8) == 3
    assert index.first_at_or_after(10, 3, 8) == 3
    core: TopicCore[Any] = TopicCore()
    assert core.offset_at(5) == 0


async def test_a_backend_without_replay_time_refuses_by_name() -> None:
    class Plain(LocalTopicStorage[Any]):
        __slots__ = ()
        capabilities = StorageCapabilities(sync=True, replay=True)

    t: TopicCell[Any] = TopicCell(Plain())
    with pytest.raises(UnsupportedOperation, match="Plain cannot subscribe from a time"):
        await t.subscribe("s", start=at(5))
    with pytest.raises(UnsupportedOperation, match="cannot seek to a time"):
        await t.seek("s", at(5))
