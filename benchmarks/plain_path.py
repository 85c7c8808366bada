"""CPU cost of the plain (no message ids asked) queue path, to compare two versions.

    python benchmarks/plain_path.py [--rounds R] [--json]

Runs against whichever ``lazily_queue`` is imported (put another checkout first on
``PYTHONPATH`` to measure it), so two versions are compared by alternating runs in the
same conditions. Figures, each the best of ``--rounds`` samples, in nanoseconds per
element:

- ``local_pair_ns``: an unobserved local ``QueueCell``, ``try_push`` then ``try_pop``
  (blocks of 64);
- ``replicated_apply_ns``: the replicated state machine applying a batch of 256
  ``QUEUE_PUSH`` and then the pop a node's queue proposes for 256 elements
  (``QUEUE_POP_STAMPED`` where it exists, else ``QUEUE_POP_MANY``), per element;
- ``topic_pair_ns``: a local topic ``try_publish`` then ``try_advance`` of one subscriber;
- ``topic_await_ns``: the same with ``await publish(v)`` (the awaitable plain publish);
- ``replicated_topic_ns``: the replicated state machine applying a batch of 256
  ``TOPIC_PUBLISH`` to a topic with one durable subscriber, then its ``TOPIC_ADVANCE_TO``
  past them and a ``TOPIC_GC``, per element;
- ``work_cycle_ns``: a local work queue push, claim and ack;
- ``work_await_push_ns``: a local work queue's awaitable ``push`` (no options), then a
  ``try_claim`` and ``try_ack`` to keep it empty;
- ``work_apply_ns``: the replicated state machine applying a batch of 256 ``WORK_PUSH``
  then a claim of 256 (``WORK_CLAIM_MANY``), per item.

With ``--json`` the last line printed is one JSON object holding every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from lazily_queue import QueueCell, TopicCell, WorkQueueCell
from lazily_queue.raft.batch import encode_command
from lazily_queue.reactive import Context
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import StateMachine

BLOCK = 64
BATCH = 256


def _best(run: Callable[[], float], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        gc.disable()
        try:
            samples.append(run())
        finally:
            gc.enable()
    return min(samples)


def local_pairs(pairs: int = 64_000) -> float:
    cell: QueueCell[int] = QueueCell(context=Context(name="bench"))
    push, pop = cell.try_push, cell.try_pop
    block = range(BLOCK)
    start = time.perf_counter_ns()
    for _ in range(pairs // BLOCK):
        for i in block:
            push(i)
        for _ in block:
            pop()
    return (time.perf_counter_ns() - start) / pairs


Op = list[Any]


def _applied(declare: list[Op], batch: Callable[[int], list[list[Op]]], batches: int) -> float:
    """ns per element of a state machine applying the ops ``declare`` (one entry), then
    the entries ``batch(b)`` of each batch ``b`` (BATCH elements' worth each: typically
    their pushes, then the take of them). Ops come without their sequence number: they
    are numbered here, in order."""
    sm = StateMachine()
    numbers = itertools.count(1)

    def entry(entry_ops: list[Op]) -> bytes:
        return encode_command(1, 0, [[next(numbers), *op] for op in entry_ops])

    sm.apply(entry(declare), 1)
    payloads = [(entry(entry_ops), 1000 + b) for b in range(batches)
                for entry_ops in batch(b)]
    start = time.perf_counter_ns()
    for payload, stamp in payloads:
        sm.apply(payload, stamp)
    return (time.perf_counter_ns() - start) / (batches * BATCH)


def replicated_apply(batches: int = 40) -> float:
    pop_code = getattr(ops, "QUEUE_POP_STAMPED", ops.QUEUE_POP_MANY)
    pushes = [[ops.QUEUE_PUSH, "q", f"message-{i:04d}" + "x" * 80] for i in range(BATCH)]
    return _applied([[ops.QUEUE_DECLARE, "q", None]],
                    lambda b: [pushes, [[pop_code, "q", BATCH]]], batches)


def topic_pairs(pairs: int = 32_000) -> float:
    topic: TopicCell[int] = TopicCell(context=Context(name="bench"))
    topic.try_subscribe("s")
    publish, advance = topic.try_publish, topic.try_advance
    block = range(BLOCK)
    start = time.perf_counter_ns()
    for _ in range(pairs // BLOCK):
        for i in block:
            publish(i)
        for _ in block:
            advance("s")
    return (time.perf_counter_ns() - start) / pairs


def topic_awaited(pairs: int = 32_000) -> float:
    async def run() -> float:
        topic: TopicCell[int] = TopicCell(context=Context(name="bench"))
        topic.try_subscribe("s")
        publish, advance = topic.publish, topic.try_advance
        block = range(BLOCK)
        start = time.perf_counter_ns()
        for _ in range(pairs // BLOCK):
            for i in block:
                await publish(i)
            for _ in block:
                advance("s")
        return (time.perf_counter_ns() - start) / pairs

    return asyncio.run(run())


def replicated_topic(batches: int = 40) -> float:
    publishes = [[ops.TOPIC_PUBLISH, "t", f"message-{i:04d}" + "x" * 80] for i in range(BATCH)]
    return _applied([[ops.TOPIC_DECLARE, "t"], [ops.TOPIC_SUBSCRIBE, "t", "s", "durable"]],
                    lambda b: [publishes, [[ops.TOPIC_ADVANCE_TO, "t", "s", (b + 1) * BATCH],
                                           [ops.TOPIC_GC, "t"]]], batches)


def work_cycles(cycles: int = 16_000) -> float:
    work = WorkQueueCell(visibility_timeout=30.0, context=Context(name="bench"))
    start = time.perf_counter_ns()
    for i in range(cycles):
        work.try_push(i)
        delivery = work.try_claim("w", 0.0)
        assert delivery is not None
        work.try_ack("w", delivery.delivery_id)
    return (time.perf_counter_ns() - start) / cycles


def work_await_pushes(cycles: int = 16_000) -> float:
    async def run() -> float:
        work = WorkQueueCell(visibility_timeout=30.0, context=Context(name="bench"))
        push, claim, ack = work.push, work.try_claim, work.try_ack
        start = time.perf_counter_ns()
        for i in range(cycles):
            await push(i)
            delivery = claim("w", 0.0)
            assert delivery is not None
            ack("w", delivery.delivery_id)
        return (time.perf_counter_ns() - start) / cycles

    return asyncio.run(run())


def work_apply(batches: int = 40) -> float:
    pushes = [[ops.WORK_PUSH, "w", f"job-{i:04d}" + "x" * 80] for i in range(BATCH)]
    return _applied([[ops.WORK_DECLARE, "w", 30_000, 3]],
                    lambda b: [pushes, [[ops.WORK_CLAIM_MANY, "w", "me", BATCH, None]]], batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="samples per figure (best)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "local_pair_ns": _best(local_pairs, args.rounds),
        "replicated_apply_ns": _best(replicated_apply, args.rounds),
        "topic_pair_ns": _best(topic_pairs, args.rounds),
        "topic_await_ns": _best(topic_awaited, args.rounds),
        "replicated_topic_ns": _best(replicated_topic, args.rounds),
        "work_cycle_ns": _best(work_cycles, args.rounds),
        "work_await_push_ns": _best(work_await_pushes, args.rounds),
        "work_apply_ns": _best(work_apply, args.rounds),
    }
    for name, value in figures.items():
        print(f"{name:22} {value:9.1f}")
    if args.json:
        print(json.dumps({k: round(v, 1) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
