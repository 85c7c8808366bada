# myapp.py: the application each node runs in its own process ([app] entry = "myapp:main")
import asyncio
from typing import Any

from lazily_queue import Node, WorkQueueCell


async def main(node: Node, options: dict[str, Any]) -> None:
    await node.wait_for_leader()
    jobs = node.work_queue("resize")
    if node.node_id == "1":  # one producer; every node runs workers
        for n in range(6):
            await jobs.push({"image": f"cat-{n}.png", "width": 640})
    workers = [work(jobs, f"node{node.node_id}-worker{k}") for k in range(options["workers"])]
    await asyncio.gather(*workers)


async def work(jobs: WorkQueueCell, name: str) -> None:
    async for job in jobs.deliveries(name):
        async with job:  # acked when the block ends, nacked if it raises
            print(f"{name} resized {job.value['image']} to {job.value['width']}px", flush=True)
