"""Replay: a topic subscriber starts at the tail, the head or an offset and can seek,
on the local and the replicated backends alike."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import OffsetOutOfRange, TopicCell, UnsupportedOperation, testing
from lazily_queue.core.topic import TopicCore
from lazily_queue.storage import LocalTopicStorage, StorageCapabilities


async def _replay(t: TopicCell[Any]) -> None:
    """Publishes 0..4, collects 0..1 (a durable cursor at 2), then replays."""
    await t.subscribe("keep")
    for value in range(5):
        await t.publish(value)
    await t.poll("keep")
    await t.poll("keep")
    await t.gc()
    assert (t.base_offset(), t.end_offset()) == (2, 5)
    await t.subscribe("tail")
    await t.subscribe("head", start="head")
    await t.subscribe("at3", "ephemeral", start=3)
    await t.subscribe("at-end", start=5)
    assert t.read_stream("tail") == []
    assert t.read_stream("head") == [2, 3, 4]
    assert t.read_stream("at3") == [3, 4]
    assert t.read_stream("at-end") == []
    with pytest.raises(OffsetOutOfRange, match=r"before the oldest.*offsets 2\.\.5") as err:
        await t.subscribe("early", start=1)
    assert (err.value.offset, err.value.base, err.value.end) == (1, 2, 5)
    assert "were collected" in str(err.value) and "ask for an offset from 2 to 5" in str(
        err.value)
    with pytest.raises(OffsetOutOfRange, match="past the tail") as err:
        await t.subscribe("late", start=6)
    assert str(err.value).endswith("(5 is the tail, the next element's offset); ask for an "
                                   "offset from 2 to 5")
    assert "early" not in t.subscriptions() and "late" not in t.subscriptions()
    # an existing subscription keeps its cursor whatever start says
    await t.subscribe("head", start="tail")
    assert t.read_stream("head") == [2, 3, 4]
    # seek backward (replay) and forward (skip), the reader follows
    reader = t.reader("tail")
    assert reader() == []
    assert await t.seek("tail", 2) == 2
    assert reader() == [2, 3, 4]
    assert await t.seek("tail", 4) == 4
    assert reader() == [4]
    with pytest.raises(OffsetOutOfRange, match="past the tail"):
        await t.seek("tail", 6)
    with pytest.raises(OffsetOutOfRange, match="before the oldest"):
        await t.seek("tail", 0)
    assert t.subscriptions()["tail"]["cursor"] == 4
    assert await t.seek("nobody", 3) is None
    await t.disconnect("keep")
    assert await t.seek("keep", 3) is None  # offline: unavailable, unchanged
    assert t.subscriptions()["keep"]["cursor"] == 2
    # a durable cursor sought back holds the frontier again
    await t.reconnect("keep")
    await t.seek("head", 5)
    await t.seek("at-end", 5)
    await t.seek("keep", 5)
    await t.seek("tail", 5)
    assert await t.gc() == 3
    assert t.base_offset() == 5


async def test_replay_and_seek_on_the_local_backend() -> None:
    t: TopicCell[Any] = TopicCell()
    await _replay(t)
    assert t.try_seek("tail", 5) == 5
    with pytest.raises(OffsetOutOfRange):
        t.try_subscribe("x", start=9)


async def test_replay_and_seek_on_the_replicated_backend() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        await _replay(leader.topic("t"))
        await c.settle()
        for node in c.nodes.values():
            assert node.topic("t").subscriptions()["head"]["cursor"] == 5


async def test_replay_survives_restart_and_snapshot() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        t = node.topic("t")
        for value in "abc":
            await t.publish(value)
        await t.subscribe("r", start=1)
        node = await c.restart(node.node_id, fresh=True)
        await c.wait_for_leader()
        await node.barrier()  # the restarted member applied its log again
        t = node.topic("t")
        assert t.read_stream("r") == ["b", "c"]


def test_a_bad_start_is_refused_by_type() -> None:
    core: TopicCore[Any] = TopicCore()
    for bad in ("middle", 1.5, True, None):
        with pytest.raises(ValueError, match="start must be"):
            core.subscribe("s", start=bad)  # type: ignore[arg-type]
    assert core.subscriptions() == {}


async def test_a_backend_without_replay_refuses_a_start_by_name() -> None:
    class Plain(LocalTopicStorage[Any]):
        __slots__ = ()
        capabilities = StorageCapabilities(sync=True)

    t: TopicCell[Any] = TopicCell(Plain())
    with pytest.raises(UnsupportedOperation, match="cannot subscribe from the head"):
        await t.subscribe("s", start="head")
    with pytest.raises(UnsupportedOperation, match="cannot seek"):
        await t.seek("s", 0)
    assert await t.subscribe("s") is not None  # the tail always works
