"""The same worker on the embedded cluster or on a broker: one changed line.

    python examples/broker_worker.py                         # a one-node embedded cluster
    python examples/broker_worker.py nats://127.0.0.1:4222   # NATS JetStream
    python examples/broker_worker.py redis://127.0.0.1:6379/0

It pushes three jobs, works them off and exits.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
from typing import Any

import lazily_queue
from lazily_queue import LazilyQueueError, Node


async def work(node: Any) -> None:
    jobs = node.work_queue("jobs", visibility_timeout=30)
    for n in range(3):
        await jobs.push({"resize": f"cat-{n}.png"})
    done = 0
    async for job in jobs.deliveries("worker-1"):
        async with job:
            print("resized", job.value["resize"])
            done += 1
        if done == 3:
            break


async def main(address: str | None) -> None:
    if address is None:
        with tempfile.TemporaryDirectory() as data:
            async with Node(1, data_dir=data, listen="tcp://127.0.0.1:0",
                            secret=secrets.token_hex(32)) as node:
                await work(node)
    else:
        async with lazily_queue.connect(address) as node:
            await work(node)


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
    except LazilyQueueError as exc:  # an address no backend serves, the broker unreachable
        sys.exit(f"broker_worker.py: {type(exc).__name__}: {exc}")
