"""A job API with a worker pool (FastAPI), replicated across the nodes of the app.

``POST /jobs {"n": 12}`` queues a job on the replicated work queue ``jobs``; every
node runs a pool of workers taking jobs with ``deliveries()``. A worker publishes its
result on the replicated topic ``results``; each node follows the topic (a durable
subscription per node) into a local dict, so ``GET /jobs/{id}`` answers on any node.
Delivery is at least once: a result published twice just overwrites the same entry.

Run one ephemeral node::

    python examples/job_api.py              # http://127.0.0.1:8000/docs

or one member of a cluster from a node configuration (see ``lazily-queue node``)::

    python examples/job_api.py --config node1.toml --port 8001
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field

from lazily_queue import Node, WorkQueueCell
from lazily_queue.integrations.fastapi import add_monitor_routes, get_node, lifespan, work_queue

JOBS = work_queue("jobs", visibility_timeout=10, max_deliveries=5)


class JobIn(BaseModel):
    n: int = Field(ge=0, le=10**6, description="the number to square")


def square(n: int) -> int:
    """The 'work' of a job."""
    return n * n


def create_app(node: Node, *, workers: int = 4) -> FastAPI:
    """The API of ``node`` with ``workers`` worker tasks."""
    results: dict[int, dict[str, Any]] = {}

    async def work(jobs: WorkQueueCell, name: str) -> None:
        topic = node.topic("results")
        async for job in jobs.deliveries(name):
            async with job:  # acked when the block ends, nacked on an exception
                value = square(job.value["n"])
                await topic.publish({"job": job.delivery.item_id, "result": value,
                                     "worker": name})

    async def follow_results(subscriber: str) -> None:
        async for result in node.topic("results").stream(subscriber):
            results[result["job"]] = result

    @asynccontextmanager
    async def pool(app: FastAPI) -> AsyncIterator[None]:
        # Subscribe before serving, so that no result published later is missed.
        await node.wait_for_leader()
        subscriber = f"api-{node.node_id}"
        await node.topic("results").subscribe(subscriber)
        jobs = node.work_queue("jobs", visibility_timeout=10, max_deliveries=5)
        tasks = [asyncio.create_task(work(jobs, f"{node.node_id}-w{k}")) for k in range(workers)]
        tasks.append(asyncio.create_task(follow_results(subscriber)))
        yield
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    app = FastAPI(title="job API", lifespan=lifespan(node, then=pool))
    add_monitor_routes(app, status_prefix="/cluster")

    @app.post("/jobs", status_code=202)
    async def submit(job: JobIn, jobs: Annotated[WorkQueueCell, Depends(JOBS)]) -> dict[str, int]:
        return {"job": await jobs.push(job.model_dump())}

    @app.get("/jobs/{job_id}")
    async def result(job_id: int) -> dict[str, Any]:
        if job_id not in results:
            raise HTTPException(404, f"job {job_id} has no result (yet)")
        return results[job_id]

    @app.get("/stats")
    async def stats(node: Annotated[Node, Depends(get_node)],
                    jobs: Annotated[WorkQueueCell, Depends(JOBS)]) -> dict[str, Any]:
        return {"node": node.node_id, "leader": node.leader_id,
                "pending": jobs.pending_len(), "in_flight": jobs.in_flight_len(),
                "dead_letters": jobs.dead_letter_len(), "results_here": len(results)}

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="a `lazily-queue node` TOML file")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    if args.config:
        from lazily_queue.config import load_config

        node = load_config(args.config).node()
    else:
        node = Node(1, data_dir=None, durability="none", listen="unix:job-api.sock",
                    secret="dev")
    uvicorn.run(create_app(node), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
