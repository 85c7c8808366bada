"""App entries run inside real node processes by the multi-process tests.

``producer`` pushes unique items to the replicated queue ``chaos`` and records each
acknowledged one in a ledger line (``ack <item>``) before pushing the next; an item
whose push failed is recorded as ``unknown <item>`` and never retried, so a duplicate
in the queue can only come from the replication layer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lazily_queue import LazilyQueueError
from lazily_queue.node import Node


async def producer(node: Node, options: dict[str, Any]) -> None:
    ledger = Path(options["ledger"])
    queue = node.queue("chaos")
    stop_file = Path(options["stop_file"])
    n = 0
    # Small line-buffered writes: the ledger must reach the OS before the next push.
    with ledger.open("a", buffering=1) as out:  # noqa: ASYNC230
        while not stop_file.exists():  # noqa: ASYNC240
            item = f"{node.node_id}:{options['incarnation']}:{n}"
            n += 1
            try:
                await queue.push(item, timeout=5.0)
            except (LazilyQueueError, TimeoutError) as exc:
                out.write(f"unknown {item} {type(exc).__name__}\n")
                await asyncio.sleep(0.05)
                continue
            out.write(f"ack {item}\n")
