"""Message ids and enqueue times on QueueCell, on the local and replicated backends."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from lazily_queue import (
    Message,
    ProposalRejected,
    QueueCell,
    QueueClosed,
    UnsupportedOperation,
    serializer,
    testing,
)
from lazily_queue.core.queue import QueuePopError
from lazily_queue.storage import StorageCapabilities, VecDequeStorage


class PlainDeque(VecDequeStorage[Any]):
    """A backend that does not declare ``messages``."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, peek=True)


async def test_local_messages_carry_ids_and_the_clock_s_enqueue_time() -> None:
    now = [100.0]
    q: QueueCell[str] = QueueCell(clock=lambda: now[0])
    await q.push("a")
    assert q.try_push("b") is None
    now[0] = 101.5
    await q.push("c")
    first = await q.pop_message()
    assert first == Message(0, "a", 100.0, 1)
    assert q.len() == 2 and q.head() == "b"  # readers follow a message pop
    assert [(m.id, m.value, m.enqueued_at) for m in await q.pop_messages(5)] == [
        (1, "b", 100.0), (2, "c", 101.5)]
    assert await q.poll_messages() is QueuePopError.Empty
    await q.close()
    with pytest.raises(QueueClosed):
        await q.pop_message()


async def test_without_a_clock_the_enqueue_time_is_unknown_and_ids_still_count() -> None:
    q: QueueCell[int] = QueueCell()
    for i in range(3):
        q.try_push(i)
    assert q.try_pop() == 0
    assert await q.pop_message() == Message(1, 1, None)


async def test_an_iteration_that_stops_early_gives_back_under_the_same_ids() -> None:
    async with testing.cluster(1) as c:
        q: QueueCell[str] = (await c.leader()).queue("q")
        await q.push_many(["a", "b", "c", "d"])
        async with contextlib.aclosing(q.messages(prefetch=4)) as messages:
            async for m in messages:
                assert (m.id, m.value) == (0, "a")
                break
        assert q.len() == 3
        async with contextlib.aclosing(q.items(prefetch=4)) as items:
            async for value in items:  # a plain iteration keeps ids too
                assert value == "b"
                break
        assert q.len() == 2
        assert [(m.id, m.value) for m in await q.pop_messages(10)] == [(2, "c"), (3, "d")]


async def test_replicated_ids_are_the_same_on_every_member_and_survive_restart(
    tmp_path: Any,
) -> None:
    async with testing.cluster(3, data_dir=tmp_path, durability="fsync") as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        await leader.queue("q").push("a")
        await follower.queue("q").push("b")
        got = await follower.queue("q").pop_message()
        assert (got.id, got.value) == (0, "a")
        assert got.enqueued_at is not None and got.enqueued_at > 1e9  # the leader's clock
        await c.settle()
        for node in c.running:
            queue = node.view.queue("q")
            assert queue is not None and queue.id_state()[0] == 2
        restarted = await c.restart(follower.node_id)
        await c.wait_for_leader()
        await restarted.queue("q").push("c")
        assert [(m.id, m.value) for m in await restarted.queue("q").pop_messages(5)] == [
            (1, "b"), (2, "c")]


async def test_a_serializing_cell_decodes_message_values() -> None:
    codec = serializer(lambda v: v.upper(), lambda v: v.lower())
    q: QueueCell[str] = QueueCell(serializer=codec)
    await q.push("X")
    assert (await q.pop_message()).value == "x"


async def test_a_backend_without_ids_refuses_pop_message_by_name() -> None:
    q: QueueCell[str] = QueueCell(PlainDeque())
    await q.push("a")
    with pytest.raises(UnsupportedOperation, match="PlainDeque does not keep message ids"):
        await q.pop_message()
    assert [v async for v in _first(q)] == ["a"]  # items() still works without ids


async def _first(q: QueueCell[str]) -> Any:
    async for value in q.items():
        yield value
        return


async def test_another_thread_pops_messages() -> None:
    q: QueueCell[str] = QueueCell(clock=lambda: 5.0)
    await q.push("a")
    handle = q.threadsafe()
    got = await asyncio.to_thread(handle.pop_message)
    assert got == Message(0, "a", 5.0)


async def test_give_back_refuses_an_id_the_queue_never_gave_and_changes_nothing() -> None:
    local: QueueCell[str] = QueueCell()
    await local.push("a")
    with pytest.raises(ValueError, match="never gave"):
        await local.give_back([Message(7, "x", None)])
    assert local.storage.elements() == ["a"] and local.len() == 1  # type: ignore[attr-defined]
    async with testing.cluster(1) as c:
        q: QueueCell[str] = (await c.leader()).queue("q")
        await q.push("a")
        with pytest.raises(ProposalRejected, match="bad_runs"):
            await q.give_back([Message(7, "x", None)])
        assert q.len() == 1
