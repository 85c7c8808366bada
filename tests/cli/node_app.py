"""An ``[app]`` entry for the node-process tests (run inside ``lazily-queue node``)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lazily_queue.node import Node


async def run(node: Node, options: dict[str, Any]) -> None:
    """Push ``push`` items into queue ``queue`` and ``jobs`` into work queue ``jobs``."""
    if options.get("fail"):
        raise RuntimeError("the app failed on purpose")
    await node.wait_for_leader()
    orders = node.queue(str(options.get("queue", "orders")))
    for i in range(int(options.get("push", 0))):
        await orders.push({"order": i})
    jobs = node.work_queue("jobs")
    for i in range(int(options.get("jobs", 0))):
        await jobs.push(i)


async def pump(node: Node, options: dict[str, Any]) -> None:
    """Push 0, 1, 2, ... into queue ``q`` until stopped, printing ``acked I`` or
    ``refused I unknown|not-applied`` (a :class:`StorageUnavailable`) for each."""
    from lazily_queue.raft.errors import StorageUnavailable

    await _push_forever(node, "q", StorageUnavailable, lambda i, exc: (
        f"refused {i} {'unknown' if 'unknown' in str(exc) else 'not-applied'}"),
        after_refusal=0.05)


async def _push_forever(node: Node, name: str, refused: type[Exception],
                        refusal: Callable[[int, Exception], str], *,
                        after_refusal: float = 0.0, every: float = 0.0) -> None:
    """Push 0, 1, 2, ... into queue ``name`` until stopped, printing ``acked I``, or
    ``refusal(I, exc)`` for a push that raised ``refused``; pausing ``after_refusal``
    seconds after such a push and ``every`` seconds after each."""
    await node.wait_for_leader()
    q = node.queue(name)
    for i in itertools.count():
        try:
            await q.push(i)
        except refused as exc:
            print(refusal(i, exc), flush=True)
            await asyncio.sleep(after_refusal)
        else:
            print(f"acked {i}", flush=True)
        if every:
            await asyncio.sleep(every)


async def load(node: Node, options: dict[str, Any]) -> None:
    """Steady load until stopped: ``rate`` pushes/s into queue ``orders`` (half popped
    back), work queue ``jobs`` (claimed and acked by a worker) and topic ``news``
    (read by subscriber ``reader``). The jobs with a value below ``fail`` are nacked
    on their first delivery only (with ``max_deliveries = 1`` they are dead-lettered);
    each one acked later (after a redrive) is printed as ``acked-after-redrive V``.
    A failed operation (say, while a member is down) is retried."""
    await node.wait_for_leader()
    rate = float(options.get("rate", 20))
    fail = int(options.get("fail", 0))
    orders = node.queue("orders")
    jobs = node.work_queue("jobs", visibility_timeout=5, max_deliveries=1)
    news = node.topic("news")
    failed: set[int] = set()
    sent = [0]

    async def produce() -> None:
        while True:
            i = sent[0]
            await orders.push(i)
            await jobs.push(i)
            await news.publish(i)
            if i % 2:
                await orders.pop()
            sent[0] = i + 1
            await asyncio.sleep(1 / rate)

    async def work() -> None:
        while True:
            delivery = await jobs.claim("worker-1")
            value = delivery.value
            if value < fail and value not in failed:
                failed.add(value)
                await jobs.nack("worker-1", delivery.delivery_id)
                continue
            await jobs.ack("worker-1", delivery.delivery_id)
            if value in failed:
                print(f"acked-after-redrive {value}", flush=True)

    async def read() -> None:
        await news.subscribe("reader")
        while True:
            await news.advance("reader")

    async def forever(step: Any) -> None:
        while True:
            try:
                await step()
            except Exception as exc:
                print(f"retrying after {type(exc).__name__}: {exc}", flush=True)
                await asyncio.sleep(0.2)

    await asyncio.gather(forever(produce), forever(work), forever(read))


async def seed(node: Node, options: dict[str, Any]) -> None:
    """Queue ``orders`` with ``push`` elements, topic ``news`` with one (unread by its
    subscribers ``reader`` and ``idle``), and work queue ``jobs`` (``max_deliveries = 1``)
    with ``jobs`` items of which the first ``dead`` are nacked into dead letters; then
    print ``seeded``."""
    await node.wait_for_leader()
    orders = node.queue("orders")
    for i in range(int(options.get("push", 0))):
        await orders.push(i)
    news = node.topic("news")
    await news.subscribe("reader")  # keeps the element retained (no topic GC)
    await news.subscribe("idle")
    await news.publish("hello")
    jobs = node.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
    for i in range(int(options.get("jobs", 0))):
        await jobs.push(i)
    for _ in range(int(options.get("dead", 0))):
        delivery = await jobs.claim("seeder")
        await jobs.nack("seeder", delivery.delivery_id)
    print("seeded", flush=True)


async def paced(node: Node, options: dict[str, Any]) -> None:
    """Push 0 .. ``count`` - 1 into queue ``q`` at ``rate`` pushes/s, each without waiting
    for the ones before, stopping early once the file ``stop`` names exists; then print
    ``pushed N failed F`` (N: pushes made, F: pushes that raised)."""
    await node.wait_for_leader()
    q = node.queue("q")
    rate, count = float(options.get("rate", 250)), int(options.get("count", 1000))
    stop = Path(options["stop"]) if "stop" in options else None
    failed: list[str] = []

    async def push(i: int) -> None:
        try:
            await q.push(i)
        except Exception as exc:  # counted and reported: the test expects none
            failed.append(f"{i}: {exc!r}")

    loop = asyncio.get_running_loop()
    start = loop.time()
    tasks = []
    for i in range(count):
        if stop is not None and i % 25 == 0 and stop.exists():
            break
        tasks.append(asyncio.ensure_future(push(i)))
        await asyncio.sleep(max(0.0, start + (i + 1) / rate - loop.time()))
    await asyncio.gather(*tasks)
    print(f"pushed {len(tasks)} failed {len(failed)} {failed[:3]}", flush=True)


async def probe(node: Node, options: dict[str, Any]) -> None:
    """Push into queue ``own`` every half second until stopped, printing ``acked I`` or
    ``failed TYPE: MESSAGE`` for each."""
    from lazily_queue.errors import OperationFailed

    await _push_forever(node, "own", OperationFailed,
                        lambda _i, exc: f"failed {type(exc).__name__}: {exc}", every=0.5)
