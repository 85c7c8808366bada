"""A local cell awaited on a second event loop (``asyncio.run`` in another thread) while
the loop that first awaited it runs raises ``ThreadSafetyError`` naming the cell, its
loop and the fix, before it applies anything; loops that take turns share cells, and
the synchronous core called from another thread (unchecked outside asyncio's debug
mode: ``test_sync_other_thread``) wakes a waiter on its own loop."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

import pytest

from lazily_queue import QueueCell, ThreadSafetyError, TopicCell, WorkQueueCell, transaction
from lazily_queue.reactive import Context, ReactiveContextError, changed, values, wait_until
from tests.threads.test_other_loop import on_another_loop

Call = Callable[[], Awaitable[Any]]

NAMES_ALL = (r"QueueCell|WorkQueueCell|TopicCell|GroupCell", r"in thread 'MainThread'",
             r"run_coroutine_threadsafe", r"threadsafe\(\)", r"context=Context\(\)",
             r"nothing was sent or applied")


async def first(generator: Any) -> Any:
    async with aclosing(generator) as items:
        return await anext(items)


async def refused_elsewhere(calls: dict[str, Call], state: Callable[[], object]) -> None:
    """Each of ``calls``, awaited on another loop, raises ``ThreadSafetyError`` saying
    what the module docstring says, and leaves ``state()`` as it was."""
    before = state()
    for name, call in calls.items():
        raised = await asyncio.to_thread(on_another_loop, call)
        assert isinstance(raised, ThreadSafetyError), (name, raised)
        for part in NAMES_ALL:
            assert re.search(part, str(raised)), (name, part, str(raised))
        assert state() == before, name


async def test_every_queue_awaitable_on_another_loop_is_refused() -> None:
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    await q.push(1)
    calls: dict[str, Call] = {
        "offer": lambda: q.offer(2), "poll": q.poll, "close": q.close,
        "push": lambda: q.push(2), "pop": q.pop, "poll_many": lambda: q.poll_many(2),
        "pop_many": lambda: q.pop_many(2), "push_many": lambda: q.push_many([2, 3]),
        "items": lambda: first(q.items()), "aiter": lambda: first(aiter(q)),
        "poll_messages": q.poll_messages, "pop_message": q.pop_message,
        "pop_messages": lambda: q.pop_messages(2), "give_back": lambda: q.give_back([]),
        "messages": lambda: first(q.messages()),
    }
    await refused_elsewhere(calls, lambda: (len(q), q.is_closed()))
    assert await q.pop() == 1  # the cell goes on working on its own loop


async def test_every_work_queue_awaitable_on_another_loop_is_refused() -> None:
    jobs = WorkQueueCell(name="jobs", clock=lambda: 0.0, context=Context())
    await jobs.push("a")
    await jobs.push("b")
    lease = await jobs.claim("w")
    d = lease.delivery_id
    calls: dict[str, Call] = {
        "push": lambda: jobs.push("c"), "push_many": lambda: jobs.push_many(["c"]),
        "poll": lambda: jobs.poll("w"), "poll_many": lambda: jobs.poll_many("w", 2),
        "claim": lambda: jobs.claim("w"), "claim_many": lambda: jobs.claim_many("w", 2),
        "ack": lambda: jobs.ack("w", d), "ack_many": lambda: jobs.ack_many("w", [d]),
        "nack": lambda: jobs.nack("w", d), "release": lambda: jobs.release("w", [d]),
        "extend": lambda: jobs.extend("w", d), "reap_expired": lambda: jobs.reap_expired(99),
        "redrive": jobs.redrive, "promote_due": jobs.promote_due,
        "deliveries": lambda: first(jobs.deliveries("w")),
    }
    await refused_elsewhere(calls, jobs.snapshot)
    assert (await jobs.ack("w", d)).outcome == "acked"


async def test_every_topic_and_group_awaitable_on_another_loop_is_refused() -> None:
    news: TopicCell[str] = TopicCell(name="news", context=Context(), clock=lambda: 0.0)
    await news.subscribe("s")
    group = news.group("billing")
    await news.publish("a")
    calls: dict[str, Call] = {
        "subscribe": lambda: news.subscribe("t"), "reconnect": lambda: news.reconnect("s"),
        "disconnect": lambda: news.disconnect("s"),
        "delete_subscriber": lambda: news.delete_subscriber("s"),
        "publish": lambda: news.publish("b"), "publish_many": lambda: news.publish_many(["b"]),
        "poll": lambda: news.poll("s"), "advance": lambda: news.advance("s"),
        "seek": lambda: news.seek("s", 0), "gc": news.gc,
        "stream": lambda: first(news.stream("s")),
        "stream_messages": lambda: first(news.stream_messages("s")),
        "group.claim": lambda: group.claim("m"), "group.declare": group.declare,
        "group.leave": lambda: group.leave("m"),
    }
    await refused_elsewhere(calls, lambda: (news.snapshot(), group.snapshot()))
    assert await news.advance("s") == "a"


async def test_a_local_transaction_committed_on_another_loop_is_refused() -> None:
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    news: TopicCell[str] = TopicCell(name="news", context=Context())
    await q.push(1)

    async def commit() -> None:
        async with transaction() as tx:
            tx.publish(news, "a")  # a cell of a context no loop holds goes first
            tx.push(q, 2)
    await refused_elsewhere({"transaction": commit}, lambda: (len(q), news.snapshot()))
    assert news.ctx.loop is None  # the refused loop took no context either


async def test_the_reactive_waits_on_another_loop_are_refused() -> None:
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    await q.offer(1)  # this loop holds the context
    bound = 60  # where the wait is not refused, it fails the test instead of hanging it
    for call in (lambda: wait_until(lambda: q.len() > 5, context=q.ctx, timeout=bound),
                 lambda: changed(q.len, timeout=bound),
                 lambda: asyncio.wait_for(first(values(q.len)), bound)):
        raised = await asyncio.to_thread(on_another_loop, call)
        assert isinstance(raised, ReactiveContextError), raised
        assert "used by another running event loop" in str(raised)


async def test_loops_taking_turns_share_a_cell() -> None:
    q: QueueCell[int] = QueueCell(name="orders", context=Context())

    for push in (lambda: q.push(1), lambda: q.push(2)):  # one asyncio.run after the other
        assert await asyncio.to_thread(on_another_loop, push) is None
    assert [await q.pop(), await q.pop()] == [1, 2]


def test_two_loops_with_contexts_of_their_own_run_side_by_side() -> None:
    """Two threads, each running its own loop on its own cell, at the same time."""
    both = threading.Barrier(2, timeout=30)
    results: list[object] = []

    def run() -> None:
        async def main() -> None:
            q: QueueCell[int] = QueueCell(capacity=1, context=Context())
            await q.push(1)
            await asyncio.to_thread(both.wait)  # the other loop holds its cell too
            results.append(await q.pop())
        asyncio.run(main())

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [1, 1]


@pytest.mark.skipif(sys.flags.dev_mode, reason="python -X dev is asyncio's debug mode")
@pytest.mark.parametrize("family", ["queue", "work_queue", "topic"])
async def test_the_sync_core_called_from_another_thread_wakes_a_waiter(
        family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A waiter wakes on its own loop (asyncio's debug mode refuses a loop's callback
    scheduled from another thread) when a plain thread writes through ``try_*`` of
    cells made outside debug mode (unchecked: ``test_sync_other_thread``)."""
    monkeypatch.delenv("PYTHONASYNCIODEBUG", raising=False)
    q: QueueCell[str] = QueueCell(name="q", context=Context())
    jobs = WorkQueueCell(name="jobs", context=q.ctx, clock=lambda: 0.0)
    news: TopicCell[str] = TopicCell(name="news", context=q.ctx, clock=lambda: 0.0)
    asyncio.get_running_loop().set_debug(True)  # after the cells were made: unchecked
    await news.subscribe("s")
    waits: dict[str, tuple[Call, Callable[[], object]]] = {
        "queue": (q.pop, lambda: q.try_push("x")),
        "work_queue": (lambda: jobs.claim("w"), lambda: jobs.try_push("x")),
        "topic": (lambda: news.advance("s"), lambda: news.try_publish("x")),
    }
    wait, write = waits[family]
    waiter = asyncio.ensure_future(wait())
    await asyncio.sleep(0)  # the waiter waits
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            write()
        except BaseException as exc:  # the test reads what it was
            errors.append(exc)
    await asyncio.to_thread(writer)
    assert errors == []
    got = await asyncio.wait_for(waiter, 60)  # a bound on a failure, not a timing
    assert getattr(got, "value", got) == "x"


def test_a_second_run_in_a_thread_takes_its_cells_back() -> None:
    """After a thread's first ``asyncio.run`` ended, its second holds the cells it
    awaits: a loop of another thread is refused while it runs."""
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    asyncio.run(q.push(1))  # this thread's first loop takes the cell, then stops

    async def second() -> BaseException | None:
        await q.push(2)
        return await asyncio.to_thread(on_another_loop, lambda: q.push(3))
    raised = asyncio.run(second())
    assert isinstance(raised, ThreadSafetyError), raised
    assert len(q) == 2


def test_a_waiter_left_on_a_closed_loop_is_dropped() -> None:
    """A pop left waiting when its loop closed is not woken by a push of a later loop
    of the same thread, which applies and returns."""
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    first_loop = asyncio.new_event_loop()
    waiter = first_loop.create_task(q.pop())
    first_loop.run_until_complete(asyncio.sleep(0))  # the pop waits
    first_loop.close()
    asyncio.run(q.push(1))
    assert len(q) == 1 and not waiter.done()


async def test_an_iterator_iterated_on_another_loop_is_refused() -> None:
    """``items()``, ``aiter(q)`` and ``messages()`` made on the loop holding the cell
    and iterated on another loop raise ``ThreadSafetyError`` and pop nothing."""
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    await q.push(1)
    for made in (q.items(), aiter(q), q.messages()):
        raised = await asyncio.to_thread(on_another_loop, lambda made=made: first(made))
        assert isinstance(raised, ThreadSafetyError), raised
        assert len(q) == 1
