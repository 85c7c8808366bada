"""Thread-safe entry: real threads against a QueueCell owned by an event loop."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from lazily_queue import (
    QueueCell,
    QueueClosed,
    QueuePopError,
    QueuePushError,
    TopicCell,
    WorkQueueCell,
)
from lazily_queue.reactive import Context
from lazily_queue.threads import LoopBridge, LoopNotRunning, ThreadSafeCell, ThreadSafetyError

PRODUCERS = 4
ITEMS = 400


async def test_thread_producers_loop_consumer() -> None:
    queue: QueueCell[tuple[int, int]] = QueueCell(capacity=8)
    handle = queue.threadsafe()

    def produce(pid: int) -> None:
        for seq in range(ITEMS):
            handle.push((pid, seq), timeout=30)

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(PRODUCERS)]
    for t in threads:
        t.start()

    def join_all() -> None:
        for t in threads:
            t.join(30)

    async def close_when_done() -> None:
        await asyncio.to_thread(join_all)
        queue.try_close()

    closer = asyncio.create_task(close_when_done())
    received = [item async for item in queue]
    await closer
    assert len(received) == PRODUCERS * ITEMS
    assert Counter(received) == Counter((p, s) for p in range(PRODUCERS) for s in range(ITEMS))
    for pid in range(PRODUCERS):  # per-producer FIFO
        assert [s for p, s in received if p == pid] == list(range(ITEMS))


async def test_loop_producer_thread_consumers() -> None:
    queue: QueueCell[int] = QueueCell(capacity=16)
    handle = queue.threadsafe()
    results: list[list[int]] = [[] for _ in range(3)]

    def consume(slot: list[int]) -> None:
        while True:
            try:
                slot.append(handle.pop(timeout=30))
            except QueueClosed:
                return

    threads = [threading.Thread(target=consume, args=(r,)) for r in results]
    for t in threads:
        t.start()
    total = 3 * ITEMS
    for i in range(total):
        await queue.push(i)
    await queue.close()
    def join_all() -> None:
        for t in threads:
            t.join(30)

    await asyncio.to_thread(join_all)
    assert not any(t.is_alive() for t in threads)
    merged = [x for r in results for x in r]
    assert sorted(merged) == list(range(total))  # nothing lost, nothing duplicated
    for r in results:
        assert r == sorted(r)  # each consumer sees FIFO order


async def test_nonblocking_calls_and_reads() -> None:
    queue: QueueCell[str] = QueueCell(capacity=1)
    handle = queue.threadsafe()

    def work() -> list[Any]:
        seen: list[Any] = [
            handle.try_push("a"),
            handle.try_push("b"),
            len(handle),
            handle.try_pop(),
            handle.try_pop(),
            handle.is_closed(),
            handle.offer("b"),
            handle.offer("c"),
            handle.poll(),
            handle.poll(),
        ]
        handle.close()
        seen += [handle.is_closed(), handle.try_push("c"), handle.try_pop(), handle.offer("d")]
        handle.try_close()  # idempotent
        return seen

    assert await asyncio.to_thread(work) == [
        None,
        QueuePushError.Full,
        1,
        "a",
        QueuePopError.Empty,
        False,
        None,
        QueuePushError.Full,
        "b",
        QueuePopError.Empty,
        True,
        QueuePushError.Closed,
        QueuePopError.Closed,
        QueuePushError.Closed,
    ]
    assert queue.is_closed() is True


async def test_timeouts_leave_the_queue_unchanged() -> None:
    queue: QueueCell[int] = QueueCell(capacity=1)
    handle = queue.threadsafe()
    with pytest.raises(TimeoutError):
        await asyncio.to_thread(handle.pop, 0.05)
    assert queue.try_push(1) is None
    with pytest.raises(TimeoutError):
        await asyncio.to_thread(handle.push, 2, 0.05)
    assert queue.storage.len() == 1 and queue.try_pop() == 1


async def test_errors_raised_on_the_loop_reach_the_thread() -> None:
    bridge = LoopBridge()

    def boom() -> None:
        raise KeyError("on the loop")

    with pytest.raises(KeyError, match="on the loop"):
        await asyncio.to_thread(bridge.call, boom)


async def test_calling_from_the_loop_thread_is_refused() -> None:
    queue: QueueCell[int] = QueueCell()
    handle = queue.threadsafe()
    with pytest.raises(ThreadSafetyError, match="would deadlock"):
        handle.try_push(1)
    with pytest.raises(ThreadSafetyError):
        handle.pop(timeout=1)
    assert queue.len() == 0


def test_bridge_needs_a_running_loop_or_an_explicit_one() -> None:
    with pytest.raises(LoopNotRunning, match=r"`LoopBridge\(loop\)`"):
        LoopBridge()
    # a cell's handle asked for in a thread without a loop says how to get one
    with pytest.raises(LoopNotRunning, match=r"make the blocking handle on the cell's event "
                       r"loop \(`cell.threadsafe\(\)` there.*`cell.threadsafe\(loop\)`"):
        QueueCell[int]().threadsafe()


@pytest.fixture
def loop_in_thread() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    if loop.is_running():
        loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    pending = asyncio.all_tasks(loop)  # waits abandoned when the loop stopped
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()


def _cell_on(loop: asyncio.AbstractEventLoop) -> QueueCell[int]:
    async def make() -> QueueCell[int]:
        return QueueCell()

    return asyncio.run_coroutine_threadsafe(make(), loop).result(5)


def test_call_after_the_loop_stopped(loop_in_thread: asyncio.AbstractEventLoop) -> None:
    cell = _cell_on(loop_in_thread)
    handle = cell.threadsafe(loop_in_thread)
    assert handle.try_push(1) is None
    loop_in_thread.call_soon_threadsafe(loop_in_thread.stop)
    for _ in range(100):
        if not loop_in_thread.is_running():
            break
        threading.Event().wait(0.01)
    with pytest.raises(LoopNotRunning, match="not running"):
        handle.try_pop()


def test_wait_interrupted_by_loop_stop(loop_in_thread: asyncio.AbstractEventLoop) -> None:
    handle = _cell_on(loop_in_thread).threadsafe(loop_in_thread)
    threading.Timer(0.1, lambda: loop_in_thread.call_soon_threadsafe(loop_in_thread.stop)).start()
    with pytest.raises(LoopNotRunning, match="stopped before the call finished"):
        handle.pop()


async def test_topic_proxy_from_threads() -> None:
    topic: TopicCell[int] = TopicCell()
    proxy = topic.threadsafe()
    topic.try_subscribe("reader")

    def publish(base: int) -> None:
        for i in range(100):  # the awaitable, and the synchronous core
            if i % 2:
                proxy.publish(base + i)
            else:
                proxy.try_publish(base + i)

    threads = [threading.Thread(target=publish, args=(b,)) for b in (0, 1000)]
    for t in threads:
        t.start()
    received: list[int] = []
    stream = topic.stream("reader")
    while len(received) < 200:
        received.append(await anext(stream))
    for t in threads:  # joined off the loop: a thread's last publish awaits the loop
        await asyncio.to_thread(t.join, 5)
        assert not t.is_alive()
    assert sorted(received) == sorted([*range(100), *range(1000, 1100)])
    assert await asyncio.to_thread(proxy.read_stream, "reader") == []
    assert await asyncio.to_thread(lambda: proxy.reader("reader")()) == []


async def test_work_queue_proxy_competing_threads() -> None:
    cell = WorkQueueCell(visibility_timeout=60, context=Context())
    proxy = cell.threadsafe()
    assert isinstance(proxy, ThreadSafeCell)
    for i in range(300):
        cell.try_push(i)
    done: list[list[Any]] = [[] for _ in range(3)]

    def work(name: str, out: list[Any]) -> None:
        while (delivery := proxy.try_claim(name, 0)) is not None:
            assert proxy.ack(name, delivery.delivery_id).outcome == "acked"
            out.append(delivery.value)

    threads = [threading.Thread(target=work, args=(f"w{i}", d)) for i, d in enumerate(done)]
    for t in threads:
        t.start()
    def join_all() -> None:
        for t in threads:
            t.join(30)

    await asyncio.to_thread(join_all)
    assert sorted(v for d in done for v in d) == list(range(300))
    assert cell.in_flight_len() == 0 and cell.is_empty()
    with pytest.raises(AttributeError, match="not callable"):
        await asyncio.to_thread(getattr, proxy, "name")
    with pytest.raises(ThreadSafetyError):
        proxy.push(1)
