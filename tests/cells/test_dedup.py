"""Exactly-once producers: ``msg_id`` on QueueCell, TopicCell and WorkQueueCell, on the
local and the replicated backends alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import (
    DedupLimits,
    InvalidMessageId,
    MessageTooLarge,
    QueueCell,
    TopicCell,
    UnsupportedOperation,
    WorkQueueCell,
    serializer,
    testing,
)
from lazily_queue.storage import LocalTopicStorage, StorageCapabilities, VecDequeStorage


class PlainDeque(VecDequeStorage[Any]):
    """A backend that does not declare ``dedup``."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, peek=True)


async def _produce_twice(q: QueueCell[Any], t: TopicCell[Any], w: WorkQueueCell) -> None:
    """Every push repeated with its id (a producer retrying after an unknown outcome)."""
    await t.subscribe("s")
    for attempt in range(2):
        await q.push("a", msg_id="m-a")
        await q.push("b", msg_id="m-b")
        assert await t.publish("a", msg_id="m-a") == 0
        assert await t.publish("b", msg_id="m-b") == 1
        assert await w.push("a", msg_id="m-a") == 0
        assert await w.push("b", msg_id="m-b") == 1
        assert attempt in (0, 1)


async def test_a_repeated_msg_id_pushes_once_on_the_local_backend() -> None:
    q: QueueCell[Any] = QueueCell()
    t: TopicCell[Any] = TopicCell()
    w = WorkQueueCell(visibility_timeout=30.0)
    await _produce_twice(q, t, w)
    assert len(q) == 2 and q.len() == 2 and q.head() == "a"  # readers saw both pushes
    assert t.elements() == ["a", "b"] and t.read_stream("s") == ["a", "b"]
    assert [p.value for p in w.pending()] == ["a", "b"]
    # ids are per cell and plain pushes are never deduplicated
    await q.push("a")
    other: QueueCell[Any] = QueueCell()
    await other.push("x", msg_id="m-a")
    assert len(q) == 3 and len(other) == 1


async def test_a_repeated_msg_id_pushes_once_through_any_member() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        await _produce_twice(leader.queue("q"), leader.topic("t"), leader.work_queue("w"))
        # the same ids again, through another member: still nothing new
        await follower.queue("q").push("a", msg_id="m-a")
        assert await follower.topic("t").publish("b", msg_id="m-b") == 1
        assert await follower.work_queue("w").push("a", msg_id="m-a") == 0
        await c.settle()
        for node in (leader, follower):
            assert node.queue("q").len() == 2
            assert node.topic("t").end_offset() == 2
            assert node.work_queue("w").pending_len() == 2
            assert node.view.deduplicated_pushes == 9 and node.view.dedup_window_len == 6


async def test_a_message_with_an_id_is_bounded_like_any_message() -> None:
    async with testing.cluster(1, max_message_bytes=1024) as c:
        q = (await c.leader()).queue("q")
        with pytest.raises(MessageTooLarge):
            await q.push("x" * 4096, msg_id="big")
        await q.push("small", msg_id="big")  # the refused push recorded nothing
        assert q.len() == 1


async def test_a_restarted_member_keeps_the_window(tmp_path: Any) -> None:
    async with testing.cluster(3, data_dir=tmp_path, durability="fsync") as c:
        follower = (await c.followers())[0]
        await follower.queue("q").push("a", msg_id="m")
        restarted = await c.restart(follower.node_id)
        await c.wait_for_leader()
        await restarted.queue("q").push("a", msg_id="m")
        await c.settle()
        assert restarted.queue("q").len() == 1


async def test_no_dedup_capability_refuses_and_the_count_bound_forgets() -> None:
    q: QueueCell[Any] = QueueCell(PlainDeque())
    with pytest.raises(UnsupportedOperation, match="PlainDeque does not deduplicate pushes"):
        await q.push("a", msg_id="m")
    small: TopicCell[Any] = TopicCell(LocalTopicStorage(dedup=DedupLimits(max_entries=1)))
    await small.publish("a", msg_id="m1")
    await small.publish("b", msg_id="m2")
    await small.publish("a", msg_id="m1")  # m1 left the window
    assert small.elements() == ["a", "b", "a"]


@pytest.mark.parametrize("bad", ["", "x" * 257, 7, b"id"])
async def test_a_bad_msg_id_is_refused_by_name(bad: Any) -> None:
    q: QueueCell[Any] = QueueCell()
    with pytest.raises(InvalidMessageId, match="msg_id"):
        await q.push("a", msg_id=bad)
    assert len(q) == 0
    with pytest.raises(InvalidMessageId):
        await WorkQueueCell(visibility_timeout=1.0).push("a", msg_id=bad)
    with pytest.raises(InvalidMessageId):
        await TopicCell().publish("a", msg_id=bad)


async def test_threads_push_with_a_msg_id_too() -> None:
    q: QueueCell[Any] = QueueCell()
    handle = q.threadsafe()
    jobs = WorkQueueCell(visibility_timeout=1.0)
    jobs_handle = jobs.threadsafe()

    def produce() -> int:
        handle.push("a", msg_id="m")
        handle.offer("a", msg_id="m")
        first: int = jobs_handle.push("j", msg_id="m")
        assert jobs_handle.push("j", msg_id="m") == first
        return first

    assert await asyncio.to_thread(produce) == 0
    assert len(q) == 1 and jobs.pending_len() == 1


async def test_a_serializing_cell_deduplicates_the_encoded_value() -> None:
    codec = serializer(lambda v: v.upper(), lambda v: v.lower())
    q: QueueCell[str] = QueueCell(serializer=codec)
    await q.push("a", msg_id="m")
    await q.push("a", msg_id="m")
    assert len(q) == 1 and await q.pop() == "a"


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        DedupLimits(max_entries=0)
    with pytest.raises(ValueError, match="max_age"):
        DedupLimits(max_age=0)


async def _agreed(c: testing.Cluster, limits: DedupLimits) -> None:
    """Wait until every running member applies ``limits``."""
    while any(n.view.dedup_limits != limits for n in c.running):  # noqa: ASYNC110 - polls state
        await asyncio.sleep(0.02)


async def test_members_configured_differently_apply_the_leaders_bounds_alike() -> None:
    small, large = DedupLimits(max_entries=2), DedupLimits(max_entries=5)

    def options(node_id: str) -> Any:
        return {"dedup": small if node_id == "1" else large}

    async with testing.cluster(3, node_options=options) as c:
        leader = await c.leader()
        async with asyncio.timeout(10):
            await _agreed(c, leader.dedup)
        for i in range(6):
            await leader.queue("q").push(i, msg_id=f"m{i}")
        await c.settle()
        expected = leader.dedup.max_entries
        assert {n.view.dedup_window_len for n in c.running} == {expected}
        # a leader with other bounds moves the whole cluster to them
        await c.kill(leader.node_id)
        successor = await c.wait_for_leader()
        async with asyncio.timeout(10):
            await _agreed(c, successor.dedup)
        await c.settle()
        assert len({n.view.dedup_window_len for n in c.running}) == 1


def test_bounds_need_the_leaders_maintenance(tmp_path: Any) -> None:
    from lazily_queue import InvalidConfiguration, Node

    with pytest.raises(InvalidConfiguration, match="maintenance_interval"):
        Node("1", data_dir=tmp_path, dedup=DedupLimits(max_entries=9),
             maintenance_interval=None)


async def test_a_local_window_is_not_moved_by_a_wall_clock_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    q: QueueCell[Any] = QueueCell(VecDequeStorage())
    await q.push("a", msg_id="m")
    stepped = time.time() + 3600  # an NTP step of an hour, past the 5-minute window
    monkeypatch.setattr(time, "time", lambda: stepped)
    await q.push("a", msg_id="m")
    assert q.len() == 1
