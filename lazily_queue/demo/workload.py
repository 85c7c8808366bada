"""The cluster demo's application: a producer and competing workers in a node process.

``lazily-queue node`` runs :func:`run` as its ``[app]`` entry. The producer pushes
numbered jobs into the replicated work queue ``demo.jobs`` at a steady rate and
records each push in the ledger before the call and after its acknowledgement. Each
worker takes deliveries with ``deliveries()`` and handles every :class:`Job` in
``async with job:`` (acked on success, nacked on an exception); the job's effect is
applied idempotently by item id in the ledger, so a redelivery never applies it twice.

Options (the ``[app]`` table): ``ledger`` (path), ``producer`` (id, absent for none),
``items``, ``rate`` (pushes per second), ``workers``, ``work_ms``, ``fail_rate``,
``seed``, ``visibility_timeout``, ``max_deliveries``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import SettlementRejected
from ..raft.errors import ReplicationError
from .ledger import Ledger, item_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..cells.work_queue import WorkQueueCell
    from ..node import Node

log = logging.getLogger(__name__)

QUEUE = "demo.jobs"
T = TypeVar("T")


class InjectedFailure(Exception):
    """A simulated processing failure (the job is nacked and delivered again)."""


class Workload:
    """One node's producer and workers over a shared ledger."""

    def __init__(self, node: Node, options: dict[str, Any]) -> None:
        self.node = node
        self.options = options
        self.ledger = Ledger(options["ledger"])
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="demo-ledger")
        self.rng = random.Random(f"{options.get('seed', 1)}-{node.node_id}-{os.getpid()}")
        self.jobs: WorkQueueCell = node.work_queue(
            QUEUE,
            visibility_timeout=float(options.get("visibility_timeout", 2.0)),
            max_deliveries=int(options.get("max_deliveries", 10)),
        )

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a ledger call on the ledger thread (SQLite never blocks the event loop)."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def produce(self, producer: int) -> None:
        items = int(self.options.get("items", 400))
        interval = 1.0 / float(self.options.get("rate", 100))
        seq = await self.db(self.ledger.next_seq, producer)
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while seq < items:
            await self.db(self.ledger.push_attempt, producer, seq)
            amount = seq % 97 + 1
            try:
                await self.jobs.push({"item": item_id(producer, seq), "amount": amount})
            except ReplicationError as exc:
                # The outcome is unknown (e.g. a timeout during a failover): keep it so.
                log.warning("push %s: %s", item_id(producer, seq), exc)
                await self.db(self.ledger.push_outcome, producer, seq, "unknown")
            else:
                await self.db(self.ledger.push_outcome, producer, seq, "acked")
            seq += 1
            next_at = max(next_at + interval, loop.time() - 0.5)
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        await self.db(self.ledger.producer_done, producer)

    async def work(self, worker: str) -> None:
        fail_rate = float(self.options.get("fail_rate", 0.0))
        work_s = float(self.options.get("work_ms", 5)) / 1000
        while True:
            try:
                async for job in self.jobs.deliveries(worker):
                    d = job.delivery
                    try:
                        async with job:
                            await asyncio.sleep(work_s)
                            if self.rng.random() < fail_rate:
                                await self.db(self.ledger.record_failure, d.value["item"],
                                              worker, d.attempt)
                                raise InjectedFailure(d.value["item"])
                            await self.db(self.ledger.apply, d.value["item"], worker, d.attempt)
                    except InjectedFailure:
                        pass
                    except SettlementRejected as exc:
                        log.info("%s: %s", worker, exc)
            except ReplicationError as exc:
                log.info("%s: %s; retrying", worker, exc)
                await asyncio.sleep(0.1)


async def run(node: Node, options: dict[str, Any]) -> None:
    """The ``[app]`` entry: run this node's producer (if any) and workers forever."""
    workload = Workload(node, options)
    tasks = [
        asyncio.create_task(workload.work(f"n{node.node_id}-w{k}-{os.getpid()}"))
        for k in range(int(options.get("workers", 2)))
    ]
    if "producer" in options:
        tasks.append(asyncio.create_task(workload.produce(int(options["producer"]))))
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        workload.pool.shutdown(wait=False)
        workload.ledger.close()
