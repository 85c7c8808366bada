"""FastAPI integration against a real three-node in-process cluster (httpx ASGI transport)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import Depends, FastAPI

from lazily_queue import Credentials, QueueCell, TopicCell, WorkQueueCell, connect, testing
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.integrations.fastapi import (
    add_monitor_routes,
    get_node,
    lifespan,
    queue,
    topic,
    work_queue,
)
from lazily_queue.node import Node
from lazily_queue.vitals_proof import NONCE_HEADER

Orders = Annotated[QueueCell[Any], Depends(queue("orders"))]
News = Annotated[TopicCell[Any], Depends(topic("news"))]
Jobs = Annotated[WorkQueueCell, Depends(work_queue("jobs", visibility_timeout=5))]


def build(node: Node) -> FastAPI:
    app = FastAPI(lifespan=lifespan(node))
    add_monitor_routes(app, status_prefix="/cluster")

    @app.post("/orders")
    async def push(body: dict[str, Any], orders: Orders) -> dict[str, int]:
        await orders.push(body)
        return {"len": orders.len()}

    @app.post("/orders/pop")
    async def pop(orders: Orders) -> Any:
        return await orders.pop(timeout=5)

    @app.post("/news")
    async def publish(body: dict[str, Any], news: News) -> dict[str, int]:
        return {"offset": await news.publish(body)}

    @app.post("/news/{reader}")
    async def subscribe(reader: str, news: News) -> dict[str, str]:
        return {"outcome": (await news.subscribe(reader)).name}

    @app.get("/news/{reader}")
    async def unread(reader: str, news: News) -> Any:
        return news.read_stream(reader)

    @app.post("/jobs")
    async def submit(body: dict[str, Any], jobs: Jobs) -> dict[str, int]:
        return {"id": await jobs.push(body)}

    @app.post("/jobs/work/{worker}")
    async def work_one(worker: str, jobs: Jobs) -> dict[str, Any]:
        async for job in jobs.deliveries(worker, prefetch=1):
            async with job:
                value = job.value
            assert job.receipt is not None
            return {"value": value, "outcome": job.receipt.outcome}
        raise AssertionError("unreachable")

    @app.get("/who")
    async def who(node: Annotated[Node, Depends(get_node)]) -> dict[str, Any]:
        return {"node": node.node_id, "leader": node.leader_id}

    return app


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_three_apps_share_replicated_cells(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    apps = [build(node) for node in nodes]
    async with AsyncExitStack() as stack:
        for app in apps:  # what an ASGI server does at startup
            await stack.enter_async_context(app.router.lifespan_context(app))
        assert all(node.running for node in nodes)
        leader = await cluster.wait_for_leader()
        await cluster.settle()  # every node has heard from the leader
        a, b, c = [await stack.enter_async_context(client(app)) for app in apps]
        assert (await a.get("/who")).json() == {"node": "1", "leader": nodes[0].leader_id}
        assert nodes[0].leader_id == leader.node_id

        for i in range(3):
            assert (await a.post("/orders", json={"order": i})).status_code == 200
        assert (await b.post("/orders/pop")).json() == {"order": 0}
        assert (await c.post("/orders/pop")).json() == {"order": 1}

        assert (await a.post("/news/r1")).json() == {"outcome": "Subscribed"}
        assert (await b.post("/news", json={"n": 1})).json() == {"offset": 0}
        await cluster.settle()
        assert (await c.get("/news/r1")).json() == [{"n": 1}]

        job_id = (await b.post("/jobs", json={"task": "resize"})).json()["id"]
        done = (await c.post("/jobs/work/c1")).json()
        assert done == {"value": {"task": "resize"}, "outcome": "acked"}
        await cluster.settle()
        assert nodes[0].work_queue("jobs", visibility_timeout=5).pending_len() == 0
        assert job_id == 0

        status = (await a.get("/cluster/status.json")).json()
        assert status["leader"] == leader.node_id
        assert status["queues"]["orders"]["len"] == 1
        assert [m["id"] for m in status["members"]] == ["1", "2", "3"]
        page = await a.get("/cluster/")
        assert page.headers["content-type"].startswith("text/html")
        assert 'id="members"' in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert (await a.get("/cluster/?interval=1e400")).status_code == 400
        history = (await a.get("/cluster/history.json")).json()
        assert history["columns"][0] == "t" and "cluster" in history
        assert (await a.get("/cluster/vitals.json")).json()["node"] == nodes[0].node_id
        assert (await a.get("/cluster/vitals.json", headers={NONCE_HEADER: "x"})).status_code == 400
        subs = (await a.get("/cluster/subscribers.json?name=news&prefix=r")).json()
        assert [s["id"] for s in subs["subscribers"]] == ["r1"] and subs["total"] == 1
        assert (await a.get("/cluster/subscribers.json?name=news&offset=-1")).status_code == 400
        assert (await a.get("/cluster/subscribers.json?name=nope")).status_code == 404
        metrics = (await c.get("/metrics")).text
        assert 'lazily_queue_operations_total{family="queue",name="orders",op="push"} 3.0' in (
            metrics)
        assert 'lazily_queue_operations_total{family="work",name="jobs",op="ack"} 1.0' in metrics
        assert 'lazily_queue_queue_depth{name="orders"} 1.0' in metrics
    assert not any(node.running for node in nodes)  # the lifespans stopped them


async def test_user_lifespan_runs_while_the_node_runs(tmp_path: Path) -> None:
    node = testing.cluster(data_dir=tmp_path).node(1)
    seen: list[bool] = []

    @asynccontextmanager
    async def mine(app: FastAPI) -> Any:
        seen.append(node.running)
        yield {"extra": 1}
        seen.append(node.running)

    app = FastAPI(lifespan=lifespan(node, then=mine))
    async with app.router.lifespan_context(app) as state:
        assert state == {"extra": 1}
    assert seen == [True, True]
    assert not node.running


async def test_dependency_without_lifespan_says_what_to_fix(tmp_path: Path) -> None:
    app = FastAPI()

    @app.get("/orders")
    async def orders(q: Orders) -> int:
        return q.len()

    async with client(app) as http:
        with pytest.raises(RuntimeError, match=r"FastAPI\(lifespan=.*lifespan\(node\)\)"):
            await http.get("/orders")


def _a_client() -> ClusterClient:
    return connect("unix:/tmp/lq-nobody.sock", Credentials("web", b"token-of-the-web-tier"))


def test_monitor_routes_on_a_client_app_are_refused_at_setup() -> None:
    client = _a_client()
    app = FastAPI(lifespan=lifespan(client))
    with pytest.raises(RuntimeError, match=r"links ClusterClient\('web'.* a client, which has "
                       r"neither: add them only to an app whose lifespan runs a Node"):
        add_monitor_routes(app, status_prefix="/cluster")
    assert [r for r in app.routes if getattr(r, "path", "") in ("/metrics", "/cluster/")] == []


async def test_monitor_routes_on_a_client_app_are_refused_when_it_starts() -> None:
    client = _a_client()
    app = FastAPI()
    add_monitor_routes(app)  # the lifespan is not known yet

    @asynccontextmanager
    async def mine(app: FastAPI) -> AsyncIterator[None]:
        async with lifespan(client)(app):
            yield

    app.router.lifespan_context = mine
    with pytest.raises(RuntimeError, match=r"a client, which has neither: add them only"):
        async with app.router.lifespan_context(app):
            raise AssertionError("the app started")
    assert client.member is None  # refused before it linked
