"""A job API with a worker pool (FastAPI) on replicated queues.

``POST /jobs {"n": 12}`` queues a job on the replicated work queue ``jobs``; every
process of the API runs a pool of workers taking jobs with ``deliveries()``. A worker
publishes its result on the replicated topic ``results``; each process follows the
topic (a subscription of its own) into a local dict, so ``GET /jobs/{id}`` answers in
any process. Delivery is at least once: a result published twice just
overwrites the same entry.

As a member of the cluster (one ephemeral node, or one node of a configuration)::

    python examples/job_api.py              # http://127.0.0.1:8000/docs
    python examples/job_api.py --config node1.toml --port 8001

As clients of a running cluster (its members list a ``[[client]]`` named ``web`` with
``produce`` and ``consume`` on ``jobs`` and ``results``), with as many web workers as you
like; each is a client of its own, none is a member::

    export JOB_API_MEMBERS=unix:///run/orders/1.sock,unix:///run/orders/2.sock
    export JOB_API_TOKEN=...                 # the token of client "web"
    uvicorn --workers 4 --factory job_api:client_app --app-dir examples --port 8000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field

from lazily_queue import ClusterClient, Credentials, LazilyQueueError, Node, WorkQueueCell, connect
from lazily_queue.integrations.fastapi import add_monitor_routes, lifespan, work_queue

JOBS = work_queue("jobs", visibility_timeout=10, max_deliveries=5)


class JobIn(BaseModel):
    n: int = Field(ge=0, le=10**6, description="the number to square")


def square(n: int) -> int:
    """The 'work' of a job."""
    return n * n


def create_app(source: Node | ClusterClient, *, workers: int = 4) -> FastAPI:
    """The API over ``source`` (a member, or a client of one) with ``workers`` tasks."""
    results: dict[int, dict[str, Any]] = {}
    if isinstance(source, Node):
        me = source.node_id
    else:
        me = f"{socket.gethostname()}-{os.getpid()}"

    async def work(jobs: WorkQueueCell, name: str) -> None:
        topic = source.topic("results")
        # One job at a time: each job goes to the first free worker (a larger prefetch
        # suits many short jobs, at the cost of one worker holding several).
        async for job in jobs.deliveries(name, prefetch=1):
            async with job:  # acked when the block ends, nacked on an exception
                value = square(job.value["n"])
                await topic.publish({"job": job.delivery.item_id, "n": job.value["n"],
                                     "result": value, "worker": name})

    async def follow_results(subscriber: str) -> None:
        async for result in source.topic("results").stream(subscriber):
            results[result["job"]] = result

    @asynccontextmanager
    async def pool(app: FastAPI) -> AsyncIterator[None]:
        # Subscribe before serving, so that no result published later is missed.
        if isinstance(source, Node):
            await source.wait_for_leader()
        # A member's name is the same after a restart: its durable cursor goes on there.
        # A web worker's is new at each start: an ephemeral subscription, which ends
        # with the client, so restarts leave no cursors holding every result back.
        subscriber = f"api-{me}"
        durability = "durable" if isinstance(source, Node) else "ephemeral"
        await source.topic("results").subscribe(subscriber, durability)
        jobs = source.work_queue("jobs", visibility_timeout=10, max_deliveries=5)
        tasks = [asyncio.create_task(work(jobs, f"{me}-w{k}")) for k in range(workers)]
        tasks.append(asyncio.create_task(follow_results(subscriber)))
        yield
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    app = FastAPI(title="job API", lifespan=lifespan(source, then=pool))
    if isinstance(source, Node):
        add_monitor_routes(app, status_prefix="/cluster")

    @app.post("/jobs", status_code=202)
    async def submit(job: JobIn, jobs: Annotated[WorkQueueCell, Depends(JOBS)]) -> dict[str, Any]:
        return {"job": await jobs.push(job.model_dump()), "by": me}

    @app.get("/jobs/{job_id}")
    async def result(job_id: int) -> dict[str, Any]:
        if job_id not in results:
            raise HTTPException(404, f"job {job_id} has no result (yet)")
        return results[job_id]

    @app.get("/stats")
    async def stats(jobs: Annotated[WorkQueueCell, Depends(JOBS)]) -> dict[str, Any]:
        where = ({"node": source.node_id, "leader": source.leader_id}
                 if isinstance(source, Node) else {"client": me, "member": source.member})
        return {**where, "pending": jobs.pending_len(), "in_flight": jobs.in_flight_len(),
                "dead_letters": jobs.dead_letter_len(), "results_here": len(results)}

    return app


def client_app() -> FastAPI:
    """The API as a client (``uvicorn --factory job_api:client_app``): members from
    ``JOB_API_MEMBERS`` (comma-separated addresses), the token of client ``web`` (or
    ``JOB_API_CLIENT``) from ``JOB_API_TOKEN``."""
    members = [a for a in os.environ.get("JOB_API_MEMBERS", "").split(",") if a]
    if not members:
        raise SystemExit("set JOB_API_MEMBERS to the members' addresses, comma-separated")
    name = os.environ.get("JOB_API_CLIENT", "web")
    return create_app(connect(members, Credentials.from_env(name, "JOB_API_TOKEN")))


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="a `lazily-queue node` TOML file")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    try:
        if args.config:
            from lazily_queue.config import load_config

            node = load_config(args.config).node()
        else:
            node = Node(1, data_dir=None, durability="none", listen="unix:job-api.sock",
                        secret="dev")
    except LazilyQueueError as exc:  # no secret, a configuration mistake, the data directory in use
        sys.exit(f"job_api.py: {type(exc).__name__}: {exc}")
    uvicorn.run(create_app(node), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
