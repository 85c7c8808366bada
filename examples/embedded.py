"""A single embedded node: a durable FIFO inside this process, no broker to run."""
import asyncio

from lazily_queue import Node


async def main() -> None:
    async with Node(1, data_dir="embedded-data", listen="unix:embedded.sock", secret="dev") as node:
        orders = node.queue("orders")
        await orders.push({"order": 1, "item": "tea"})
        print("popped", await orders.pop(), "- still queued:", orders.len())

asyncio.run(main())
