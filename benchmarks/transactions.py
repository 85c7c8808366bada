"""Consume-transform-produce in one transaction against the same ops as separate calls.

    python benchmarks/transactions.py [--cycles N] [--rounds R] [--json]

Each cycle claims a job from a work queue (outside the transaction, as the API asks),
then acks it, pushes its result to a queue and publishes an audit record to a topic:

- ``separate``: ``await ack``, ``await push``, ``await publish``, one after the other
  (on a node: three replicated entries, each awaited);
- ``transaction``: ``async with ... transaction() as tx`` holding the same three ops,
  applied all or none (on a node: one replicated entry).

No peer installed here has an embedded equivalent (Kafka's transactional produce with
offset commit is the nearest), so the ratio is against the same work done without a
transaction, measured in the same run. Rows: the local cells (``lazily_queue.transaction()``),
one in-process node, and a 3-member in-process cluster (Raft over loopback, no fsync).
Figures are microseconds per cycle, the best of ``--rounds`` samples; ratio =
transaction / separate. With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lazily_queue import QueueCell, TopicCell, WorkQueueCell, testing, transaction
from lazily_queue.reactive import Context

Cycle = Callable[[int], Awaitable[None]]


class Cells:
    """The three cells of a cycle and how their transaction is made."""

    def __init__(self, jobs: WorkQueueCell, results: QueueCell[Any], audit: TopicCell[Any],
                 make_tx: Callable[[], Any], now: Callable[[], float | None]) -> None:
        self.jobs, self.results, self.audit = jobs, results, audit
        self.make_tx = make_tx
        self.now = now

    async def fill(self, n: int) -> None:
        for i in range(n):
            await self.jobs.push(i)

    async def separate(self, i: int) -> None:
        job = await self.jobs.claim("w", now=self.now())
        await self.jobs.ack("w", job.delivery_id)
        await self.results.push(job.value * 2)
        await self.audit.publish({"done": job.item_id})

    async def transacted(self, i: int) -> None:
        job = await self.jobs.claim("w", now=self.now())
        async with self.make_tx() as tx:
            tx.ack(self.jobs, "w", job.delivery_id)
            tx.push(self.results, job.value * 2)
            tx.publish(self.audit, {"done": job.item_id})


async def _timed(cells: Cells, cycle: Cycle, cycles: int) -> float:
    """Microseconds per cycle of ``cycles`` cycles (the jobs pushed first, untimed)."""
    await cells.fill(cycles)
    gc.disable()
    try:
        start = time.perf_counter()
        for i in range(cycles):
            await cycle(i)
        return (time.perf_counter() - start) / cycles * 1e6
    finally:
        gc.enable()


async def _pair(make: Callable[[str], Awaitable[Cells]], cycles: int,
                rounds: int) -> tuple[float, float]:
    """Best ``(separate, transaction)`` microseconds per cycle over ``rounds``, the two
    alternating on fresh cells."""
    best = [float("inf"), float("inf")]
    for r in range(rounds):
        for k, kind in enumerate(("separate", "transacted")):
            cells = await make(f"{kind}{r}")
            best[k] = min(best[k], await _timed(cells, getattr(cells, kind), cycles))
    return best[0], best[1]


async def local_row(cycles: int, rounds: int) -> tuple[float, float]:
    async def make(_tag: str) -> Cells:
        ctx = Context(name="bench")
        return Cells(WorkQueueCell(visibility_timeout=30.0, context=ctx, clock=time.monotonic),
                     QueueCell(context=ctx), TopicCell(context=ctx), transaction, lambda: None)
    return await _pair(make, cycles, rounds)


async def node_row(members: int, cycles: int, rounds: int) -> tuple[float, float]:
    async with testing.cluster(members) as c:
        node = await c.leader()

        async def make(tag: str) -> Cells:
            return Cells(node.work_queue(f"jobs-{tag}", visibility_timeout=30),
                         node.queue(f"results-{tag}"), node.topic(f"audit-{tag}"),
                         node.transaction, lambda: None)
        return await _pair(make, cycles, rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000, help="cycles per sample")
    parser.add_argument("--rounds", type=int, default=3, help="samples per figure (best)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    rows = {
        "local cells": asyncio.run(local_row(args.cycles, args.rounds)),
        "node (1 member)": asyncio.run(node_row(1, max(1, args.cycles // 10), args.rounds)),
        "cluster (3 members)": asyncio.run(node_row(3, max(1, args.cycles // 10),
                                                    args.rounds)),
    }
    print("consume-transform-produce (claim; ack + push + publish), microseconds per cycle")
    print("| backend | separate calls | one transaction | ratio |")
    print("|---|---:|---:|---:|")
    out: dict[str, Any] = {}
    for name, (separate, transacted) in rows.items():
        ratio = transacted / separate
        print(f"| {name} | {separate:,.1f} | {transacted:,.1f} | {ratio:.2f} |")
        out[name] = {"separate_us": round(separate, 1), "transaction_us": round(transacted, 1),
                     "ratio": round(ratio, 3)}
    if args.json:
        print(json.dumps({"cycles": args.cycles, "rounds": args.rounds, "rows": out}))


if __name__ == "__main__":
    main()
