"""An ``[app]`` entry for the node-process tests (run inside ``lazily-queue node``)."""

from __future__ import annotations

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
        await jobs.apush(i)
