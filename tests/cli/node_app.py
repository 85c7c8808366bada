"""An ``[app]`` entry for the node-process tests (run inside ``lazily-queue node``)."""

from __future__ import annotations

import asyncio
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
    """Push 0, 1, 2, ... into queue ``q`` until stopped, printing each outcome."""
    from lazily_queue.raft.errors import StorageUnavailable

    await node.wait_for_leader()
    q = node.queue("q")
    i = 0
    while True:
        try:
            await q.push(i)
        except StorageUnavailable as exc:
            print(f"refused {i} {'unknown' if 'unknown' in str(exc) else 'not-applied'}",
                  flush=True)
            await asyncio.sleep(0.05)
        else:
            print(f"acked {i}", flush=True)
        i += 1
