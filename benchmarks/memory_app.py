"""The workload of ``benchmarks/memory.py``: an ``[app]`` entry run inside every node.

Every node writes its figures to ``stats-<id>.json`` each second and answers dump
requests (a file ``want-<label>`` in the run directory: it writes
``dump-<label>-<id>.json``, see :mod:`benchmarks.memory_probe`). The first node that
leads after a barrier claims the run and, in its process:

1. pushes and consumes ``warmup`` messages (the mix below), writes phase ``warmed``;
2. waits for the file ``go``, pushes and consumes ``count`` messages, writing
   ``progress.json`` each second; writes phase ``done`` (or ``{"error": ...}``).

The mix, split in thirds: a queue with producers and one consumer (``async for``), a
work queue with producers and :data:`WORKERS` workers (claim, then ack), a topic with
producers and one durable subscriber (``stream``). Producers keep :data:`LANES`
operations in flight per kind but at most :data:`WINDOW` unconsumed messages, so the
backlog stays bounded and what is measured is what a message leaves behind. Consumers
live across both phases. Only the public cell API drives the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.memory_probe import TRACE_FRAMES, dump, internals, rss_kb
from benchmarks.peers_common import PAYLOAD, spread
from lazily_queue import LazilyQueueError
from lazily_queue.node import Node

#: Pushes in flight per kind of queue.
LANES = 64
#: Most messages of one kind pushed but not yet consumed.
WINDOW = 1024
#: Workers claiming and acking on the work queue.
WORKERS = 4
MIX = (f"1/3 queue (producers, {LANES} in flight, 1 consumer), 1/3 work queue ({WORKERS} "
       f"workers claim+ack), 1/3 topic (1 durable subscriber); at most {WINDOW} unconsumed "
       "per kind")


def _write(path: Path, doc: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(doc))
    partial.replace(path)


class Mix:
    """The three workloads; consumers run from :meth:`start` until :meth:`stop`."""

    def __init__(self, node: Node) -> None:
        self.queue = node.queue("memory-queue")
        self.jobs = node.work_queue("memory-jobs")
        self.topic = node.topic("memory-topic")
        self.consumed = {"queue": 0, "work": 0, "topic": 0}
        self.windows = {kind: asyncio.Semaphore(WINDOW) for kind in self.consumed}
        self.changed = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    @property
    def done(self) -> int:
        return sum(self.consumed.values())

    def _got(self, kind: str) -> None:
        self.consumed[kind] += 1
        self.windows[kind].release()
        self.changed.set()

    async def _queue_consumer(self) -> None:
        async for _ in self.queue:
            self._got("queue")

    async def _worker(self, name: str) -> None:
        async for job in self.jobs.deliveries(name):
            async with job:
                pass
            self._got("work")

    async def _subscriber(self) -> None:
        async for _ in self.topic.stream("memory-subscriber"):
            self._got("topic")

    async def start(self) -> None:
        await self.topic.subscribe("memory-subscriber", "durable")
        self.tasks = [asyncio.create_task(self._queue_consumer()),
                      asyncio.create_task(self._subscriber()),
                      *(asyncio.create_task(self._worker(f"worker-{w}"))
                        for w in range(WORKERS))]

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def run(self, count: int) -> None:
        """Push ``count`` messages (split in thirds) and wait until all are consumed."""
        third = count // 3
        shares = {"queue": count - 2 * third, "work": third, "topic": third}
        pushes: dict[str, Callable[[], Awaitable[Any]]] = {
            "queue": lambda: self.queue.push(PAYLOAD),
            "work": lambda: self.jobs.push(PAYLOAD),
            "topic": lambda: self.topic.publish(PAYLOAD),
        }
        targets = {kind: self.consumed[kind] + n for kind, n in shares.items()}

        def gated(kind: str) -> Callable[[], Awaitable[Any]]:
            async def push() -> None:
                await self.windows[kind].acquire()
                await pushes[kind]()
            return push

        await asyncio.gather(*(spread(n, gated(kind), LANES) for kind, n in shares.items()))
        while any(self.consumed[k] < targets[k] for k in targets):
            self._check()
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 1.0)

    def _check(self) -> None:
        for task in self.tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise RuntimeError(f"a consumer failed: {task.exception()!r}")


async def _report(node: Node, root: Path) -> None:
    """Each second: this node's figures; answer dump requests."""
    answered: set[str] = set()
    stats = root / f"stats-{node.node_id}.json"
    while True:
        try:
            status = node.status()
            _write(stats, {"time": time.time(), "rss_kb": rss_kb(),
                           "snapshots": status["snapshots_taken"] + status["snapshots_installed"],
                           "log_first_index": status["log_first_index"],
                           "log_last_index": status["log_last_index"],
                           "state": status["state"], "internals": internals(node),
                           "topics_collected": all(
                               t.retention_frontier() <= t.base_offset()
                               for t in node.view.topics.values())})
        except Exception as exc:  # a probe that no longer fits the internals
            _write(stats, {"time": time.time(), "error": f"{type(exc).__name__}: {exc}"})
        for want in root.glob("want-*"):  # noqa: ASYNC240 - a handful of names
            label = want.name.removeprefix("want-")
            if label not in answered:
                answered.add(label)
                dump(node, root, label)
        await asyncio.sleep(1.0)


async def _claim(node: Node, claim: Path) -> bool:
    while True:
        if claim.exists():  # noqa: ASYNC240
            return False
        with contextlib.suppress(LazilyQueueError, TimeoutError):
            await node.barrier()
            if node.is_leader:
                try:
                    os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    return False
                return True
        await asyncio.sleep(0.1)


async def _drive(node: Node, root: Path, warmup: int, count: int) -> None:
    mix = Mix(node)
    phase = root / "phase.json"
    await mix.start()
    try:
        await mix.run(warmup)
        _write(phase, {"phase": "warmed", "node": node.node_id})
        while not (root / "go").exists():  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        base = mix.done
        progress = root / "progress.json"
        run = asyncio.create_task(mix.run(count))
        while not run.done():
            _write(progress, {"time": time.time(), "done": mix.done - base})
            await asyncio.wait({run}, timeout=1.0)
        await run
        _write(progress, {"time": time.time(), "done": mix.done - base})
        _write(phase, {"phase": "done", "node": node.node_id, "leader": node.is_leader})
    finally:
        await mix.stop()


async def run(node: Node, options: dict[str, Any]) -> None:
    """The ``[app]`` entry: report on every node; drive the load on the claiming one."""
    root = Path(options["root"])
    if options.get("trace") and not tracemalloc.is_tracing():
        tracemalloc.start(TRACE_FRAMES)
    reporter = asyncio.create_task(_report(node, root))
    try:
        if await _claim(node, root / "claim"):
            try:
                await _drive(node, root, int(options["warmup"]), int(options["count"]))
            except Exception as exc:
                _write(root / "phase.json", {"error": f"{type(exc).__name__}: {exc}"})
        await reporter  # serve and report until the node stops
    finally:
        reporter.cancel()
