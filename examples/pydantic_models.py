"""Pydantic models through a work queue: a serializer= encodes them as JSON bytes.

Run it: ``python examples/pydantic_models.py`` (one embedded node; the same cell code
runs unchanged on a local WorkQueueCell or on a cluster).
"""
import asyncio
from datetime import UTC, datetime

from pydantic import BaseModel

from lazily_queue import Node, serializer


class Resize(BaseModel):
    image: str
    width: int
    requested_at: datetime


RESIZES = serializer(Resize.model_dump_json, Resize.model_validate_json)


async def main() -> None:
    async with Node(1, data_dir=None, durability="none", listen="unix:pydantic.sock",
                    secret="dev") as node:
        await node.wait_for_leader()
        jobs = node.work_queue("resize", serializer=RESIZES)
        await jobs.push(Resize(image="cat.png", width=640, requested_at=datetime.now(UTC)))
        async for job in jobs.deliveries("worker-1"):
            async with job:  # acked when the block ends
                request: Resize = job.value
                print(f"resizing {request.image} to {request.width}px")
            break


if __name__ == "__main__":
    asyncio.run(main())
