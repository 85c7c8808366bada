"""In asyncio's debug mode, a local cell's synchronous core (``try_push``, ``try_claim``,
``try_publish``, ...) called in a plain thread while the event loop that holds the cell
runs in another one raises ``ThreadSafetyError`` naming the cell, the loop's thread and
the fixes, having applied nothing; on the loop's thread, through the cell's blocking
handle, with no loop holding the cell, or once its loop stopped, it works. Outside
debug mode it is not checked (as asyncio's own thread checks)."""

from __future__ import annotations

import asyncio
import functools
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue import QueueCell, ThreadSafetyError, TopicCell, WorkQueueCell
from lazily_queue.reactive import Context
from lazily_queue.serializers import serializer

Calls = dict[str, Callable[[], object]]

NAMES = (r"in thread 'MainThread'", r"threadsafe\(\)", r"call_soon_threadsafe",
         r"nothing was applied")


def in_a_thread(call: Callable[[], object]) -> object:
    """What ``call()`` returned or raised in a new plain thread."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # the test reads what it was
            out.append(exc)
    thread = threading.Thread(target=run, name="worker")
    thread.start()
    thread.join()
    return out[0]


async def refused_in_a_thread(cell: Any, calls: Calls, state: Callable[[], object]) -> None:
    """Each of ``calls``, made in another thread while this loop holds ``cell``, raises
    ``ThreadSafetyError`` naming the cell and the call and leaves ``state()`` as it was."""
    before = state()
    for name, call in calls.items():
        raised = await asyncio.to_thread(in_a_thread, call)
        assert isinstance(raised, ThreadSafetyError), (name, raised)
        text = str(raised)
        assert f"{type(cell).__name__} {cell.name!r}: {name} was called in thread " \
               "'worker'" in text, text
        for part in NAMES:
            assert re.search(part, text), (name, part, text)
        assert state() == before, name


@pytest.fixture(autouse=True)
def debug_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asyncio's debug mode for the cells each test makes (read when a cell is made)."""
    monkeypatch.setenv("PYTHONASYNCIODEBUG", "1")


def try_names(cell: object) -> set[str]:
    return {name for name in dir(cell) if name.startswith("try_")}


QUEUES: dict[str, Callable[[], QueueCell[Any]]] = {
    "unbounded": lambda: QueueCell(name="orders", context=Context()),
    "bounded": lambda: QueueCell(name="orders", capacity=4, context=Context()),
    "clocked": lambda: QueueCell(name="orders", context=Context(), clock=lambda: 1.0),
    "serialized": lambda: QueueCell(name="orders", context=Context(),
                                    serializer=serializer(str, int)),
}


@pytest.mark.parametrize("kind", [*QUEUES, "delayed"])
async def test_a_queue_try_call_in_another_thread_is_refused(kind: str) -> None:
    q = QUEUES.get(kind, QUEUES["unbounded"])()
    await q.push(1)  # this loop holds the cell
    if kind == "delayed":  # try_push / try_pop go through the backend from now on
        await q.push(9, delay=3600)
    calls: Calls = {"try_push": lambda: q.try_push(2), "try_pop": q.try_pop,
                    "try_close": q.try_close}
    assert set(calls) == try_names(q)
    await refused_in_a_thread(q, calls, lambda: (len(q), q.is_closed(), q.delayed_len()))
    assert q.try_push(2) is None and q.try_pop() == 1  # the loop's thread goes on


async def test_every_work_queue_and_group_try_call_in_another_thread_is_refused() -> None:
    jobs = WorkQueueCell(name="jobs", clock=lambda: 0.0, context=Context())
    await jobs.push("a")
    d = (await jobs.claim("w")).delivery_id
    calls: Calls = {
        "try_push": lambda: jobs.try_push("b"), "try_claim": lambda: jobs.try_claim("w", 0),
        "try_ack": lambda: jobs.try_ack("w", d), "try_nack": lambda: jobs.try_nack("w", d),
        "try_extend": lambda: jobs.try_extend("w", d, 0),
        "try_reap_expired": lambda: jobs.try_reap_expired(99),
        "try_redrive": jobs.try_redrive,
    }
    assert set(calls) == try_names(jobs)
    await refused_in_a_thread(jobs, calls, jobs.snapshot)
    assert jobs.try_ack("w", d).outcome == "acked"

    news: TopicCell[str] = TopicCell(name="news", context=Context(), clock=lambda: 0.0)
    group = news.group("billing")
    await news.publish("a")
    g = (await group.claim("m", now=0)).delivery_id
    group_calls: Calls = {
        "try_claim": lambda: group.try_claim("m", 0), "try_ack": lambda: group.try_ack("m", g),
        "try_nack": lambda: group.try_nack("m", g),
        "try_extend": lambda: group.try_extend("m", g, 0),
        "try_reap_expired": lambda: group.try_reap_expired(99),
        "try_redrive": group.try_redrive,
    }
    assert set(group_calls) == try_names(group) - {"try_push"}  # a topic feeds a group
    await refused_in_a_thread(group, group_calls, group.snapshot)


async def test_every_topic_try_call_in_another_thread_is_refused() -> None:
    news: TopicCell[str] = TopicCell(name="news", context=Context(), clock=lambda: 0.0)
    await news.subscribe("s")
    await news.publish("a")
    calls: Calls = {
        "try_subscribe": lambda: news.try_subscribe("t"),
        "try_reconnect": lambda: news.try_reconnect("s"),
        "try_disconnect": lambda: news.try_disconnect("s"),
        "try_delete_subscriber": lambda: news.try_delete_subscriber("s"),
        "try_publish": lambda: news.try_publish("b"),
        "try_advance": lambda: news.try_advance("s"), "try_seek": lambda: news.try_seek("s", 0),
        "try_gc": news.try_gc,
    }
    calls["group"] = lambda: news.group("billing")  # opens a group: a synchronous change
    assert set(calls) == try_names(news) | {"group"}
    await refused_in_a_thread(news, calls, lambda: (news.snapshot(), news.storage.groups))
    assert news.try_advance("s") == "a"
    billing = news.group("billing")  # opened on the loop: a thread may look it up
    assert in_a_thread(lambda: news.group("billing")) is billing


@pytest.mark.parametrize("family", ["queue", "work_queue", "topic"])
async def test_a_waiter_is_woken_by_the_blocking_handle_not_by_another_thread(
        family: str) -> None:
    """A thread's ``try_*`` is refused and leaves the waiter waiting; the same call
    through the cell's blocking handle wakes it on its loop (asyncio's debug mode
    refuses a loop's callback scheduled from another thread)."""
    asyncio.get_running_loop().set_debug(True)
    q: QueueCell[str] = QueueCell(name="q", context=Context())
    jobs = WorkQueueCell(name="jobs", context=q.ctx, clock=lambda: 0.0)
    news: TopicCell[str] = TopicCell(name="news", context=q.ctx, clock=lambda: 0.0)
    await news.subscribe("s")
    cases: dict[str, tuple[Callable[[], Any], Callable[[Any], object]]] = {
        "queue": (q.pop, lambda cell: cell.try_push("x")),
        "work_queue": (lambda: jobs.claim("w"), lambda cell: cell.try_push("x")),
        "topic": (lambda: news.advance("s"), lambda cell: cell.try_publish("x")),
    }
    cell = {"queue": q, "work_queue": jobs, "topic": news}[family]
    wait, write = cases[family]
    waiter = asyncio.ensure_future(wait())
    await asyncio.sleep(0)  # the waiter waits
    raised = await asyncio.to_thread(in_a_thread, lambda: write(cell))
    assert isinstance(raised, ThreadSafetyError), raised
    assert not waiter.done()
    handle = cell.threadsafe()
    assert not isinstance(await asyncio.to_thread(in_a_thread, lambda: write(handle)),
                          BaseException)
    got = await asyncio.wait_for(waiter, 60)  # a bound on a failure, not a timing
    assert getattr(got, "value", got) == "x"


def test_with_no_loop_holding_the_cell_any_thread_calls_it() -> None:
    """Plain synchronous use, and loops taking turns: the cell is held only while its
    loop runs, so a thread calls it before the first loop and after each one stops."""
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    jobs = WorkQueueCell(name="jobs", clock=lambda: 0.0, context=q.ctx)
    assert in_a_thread(lambda: q.try_push(1)) is None
    asyncio.run(q.push(2))  # this thread's loop held the cell, and stopped
    assert in_a_thread(lambda: q.try_push(3)) is None
    assert in_a_thread(lambda: jobs.try_push("a")) == 0
    assert [q.try_pop(), q.try_pop(), q.try_pop()] == [1, 2, 3]


def test_a_loop_run_again_in_another_thread_holds_its_cells_there() -> None:
    """A loop that held a cell in this thread, stopped and runs again in another thread
    holds the cell there: this thread is refused meanwhile."""
    q: QueueCell[int] = QueueCell(name="orders", context=Context())
    loop = asyncio.new_event_loop()
    held, release = threading.Event(), loop.create_future()

    async def elsewhere() -> None:
        await q.push(2)
        assert q.try_push(3) is None
        held.set()
        await release

    try:
        loop.run_until_complete(q.push(1))  # held by the loop, in this thread
        worker = threading.Thread(target=loop.run_until_complete, args=(elsewhere(),),
                                  name="worker")
        worker.start()
        try:
            assert held.wait(60)  # a bound on a failure, not a timing
            with pytest.raises(ThreadSafetyError, match="runs in thread 'worker'"):
                q.try_push(4)
        finally:
            loop.call_soon_threadsafe(release.set_result, None)
            worker.join()
    finally:
        loop.close()
    assert len(q) == 3


@pytest.mark.skipif(sys.flags.dev_mode, reason="python -X dev is asyncio's debug mode")
async def test_outside_debug_mode_the_synchronous_core_is_not_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Made outside asyncio's debug mode, a cell's synchronous core runs in any thread
    unchecked (not thread-safe: the caller keeps it to the loop's), at no cost."""
    monkeypatch.delenv("PYTHONASYNCIODEBUG")
    for make in QUEUES.values():
        q = make()
        await q.push(1)  # this loop holds the cell
        assert await asyncio.to_thread(in_a_thread, functools.partial(q.try_push, 2)) is None
        assert len(q) == 2
    jobs = WorkQueueCell(name="jobs", clock=lambda: 0.0, context=Context())
    await jobs.push("a")
    assert await asyncio.to_thread(in_a_thread, lambda: jobs.try_push("b")) == 1


@pytest.mark.skipif(sys.flags.dev_mode, reason="python -X dev is asyncio's debug mode")
def test_a_cell_made_on_a_loop_in_debug_mode_checks_its_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``asyncio.run(..., debug=True)`` without the environment variable: the cells made
    on that loop check; one made outside it does not."""
    monkeypatch.delenv("PYTHONASYNCIODEBUG")
    outside: QueueCell[int] = QueueCell(name="outside", context=Context())

    async def main() -> object:
        q: QueueCell[int] = QueueCell(name="orders", context=Context())
        await q.push(1)
        await outside.push(1)
        assert await asyncio.to_thread(in_a_thread, functools.partial(outside.try_push, 2)) \
            is None
        return await asyncio.to_thread(in_a_thread, functools.partial(q.try_push, 2))

    assert isinstance(asyncio.run(main(), debug=True), ThreadSafetyError)


def test_a_backend_with_the_documented_one_argument_reporting_ops_still_serves_a_cell(
) -> None:
    """The capability is ``reporting_ops(report)``: the thread check wraps what it
    returns, in debug mode as outside it."""
    from lazily_queue.storage.local import VecDequeStorage

    class Backend(VecDequeStorage[int]):
        def reporting_ops(self, report: Any) -> Any:  # the documented signature
            return super().reporting_ops(report)

    q: QueueCell[int] = QueueCell(Backend(), name="custom", context=Context())
    assert q.try_push(1) is None and q.try_pop() == 1
