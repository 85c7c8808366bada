"""Nanoseconds per awaited operation of the in-process storages called directly:
``await s.offer(x); await s.poll()`` on a ``VecDequeStorage`` (per pair) and
``await t.publish(x)`` on a ``LocalTopicStorage`` (per publish), each driven by a
hand-stepped coroutine (no event loop: every op completes at once).

    python benchmarks/storage_ops.py [--ops N] [--repeat R] [--json]

Each figure is the median of ``R`` runs of ``N`` ops, the garbage collector off.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Coroutine
from typing import Any

from lazily_queue.storage import LocalTopicStorage, VecDequeStorage


def _drive(coro: Coroutine[Any, Any, float]) -> float:
    """Run ``coro``, which never suspends, to its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return float(done.value)
    raise RuntimeError("an in-process storage op suspended; it must complete at once")


async def _offer_poll(ops: int) -> float:
    s: VecDequeStorage[int] = VecDequeStorage()
    offer, poll = s.offer, s.poll
    start = time.perf_counter_ns()
    for i in range(ops):
        await offer(i)
        await poll()
    return (time.perf_counter_ns() - start) / ops


async def _publish(ops: int) -> float:
    t: LocalTopicStorage[int] = LocalTopicStorage()
    publish = t.publish
    start = time.perf_counter_ns()
    for i in range(ops):
        await publish(i)
    return (time.perf_counter_ns() - start) / ops


def measure(ops: int, repeat: int) -> dict[str, float]:
    """Median ns per op of each workload over ``repeat`` runs (interleaved)."""
    runs: dict[str, list[float]] = {"offer_poll": [], "publish": []}
    gc.disable()
    try:
        for _ in range(repeat):
            runs["offer_poll"].append(_drive(_offer_poll(ops)))
            runs["publish"].append(_drive(_publish(ops)))
    finally:
        gc.enable()
    return {name: round(statistics.median(values), 1) for name, values in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.ops, args.repeat)
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"VecDequeStorage offer+poll: {figures['offer_poll']} ns per pair")
        print(f"LocalTopicStorage publish:  {figures['publish']} ns per publish")


if __name__ == "__main__":
    main()
