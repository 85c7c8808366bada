"""aiohttp integration against a real three-node in-process cluster (aiohttp test client)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import Credentials, connect, testing
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.integrations.aiohttp import (
    NODE,
    add_monitor_routes,
    node_of,
    setup,
    setup_client,
)
from lazily_queue.node import Node


async def push(request: web.Request) -> web.Response:
    orders = request.app[NODE].queue("orders")
    await orders.push(await request.json())
    return web.json_response({"len": orders.len()})


async def pop(request: web.Request) -> web.Response:
    return web.json_response(await node_of(request).queue("orders").pop(timeout=5))


async def submit(request: web.Request) -> web.Response:
    jobs = node_of(request).work_queue("jobs", visibility_timeout=5)
    return web.json_response({"id": await jobs.push(await request.json())})


async def work(request: web.Request) -> web.Response:
    jobs = node_of(request).work_queue("jobs", visibility_timeout=5)
    async for job in jobs.deliveries(request.match_info["worker"]):
        async with job:
            value = job.value
        return web.json_response({"value": value})
    raise AssertionError("unreachable")


def build(node: Node) -> web.Application:
    app = web.Application()
    setup(app, node, status_prefix="/cluster")
    app.router.add_post("/orders", push)
    app.router.add_post("/orders/pop", pop)
    app.router.add_post("/jobs", submit)
    app.router.add_post("/jobs/work/{worker}", work)
    return app


async def test_three_apps_share_replicated_cells(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(TestClient(TestServer(build(node))))
            for node in nodes
        ]
        assert all(node.running for node in nodes)  # started by the on_startup hook
        leader = await cluster.wait_for_leader()
        a, b, c = clients
        for i in range(3):
            response = await a.post("/orders", json={"order": i})
            assert response.status == 200
        assert await (await b.post("/orders/pop")).json() == {"order": 0}
        assert await (await c.post("/jobs", json={"task": "thumbnail"})).json() == {"id": 0}
        assert await (await a.post("/jobs/work/a1")).json() == {"value": {"task": "thumbnail"}}
        await cluster.settle()

        status = await (await b.get("/cluster/status.json")).json()
        assert status["node"] == "2" and status["leader"] == leader.node_id
        assert status["queues"]["orders"]["len"] == 2
        assert status["work_queues"]["jobs"] == {
            "pending": 0, "in_flight": 0, "dead_letters": 0, "delayed": 0, "receipts": 1,
            "workers": {}, "workers_total": 0}
        page = await b.get("/cluster/")
        assert page.headers["Content-Type"].startswith("text/html")
        assert "status.json" in await page.text()
        metrics = await (await c.get("/metrics")).text()
        assert 'lazily_queue_operations_total{family="queue",name="orders",op="pop"} 1.0' in (
            metrics)
        assert 'lazily_queue_operations_total{family="work",name="jobs",op="claim"} 1.0' in (
            metrics)
        assert "lazily_queue_fsync_seconds_bucket" in metrics
    assert not any(node.running for node in nodes)  # stopped by the on_cleanup hook


async def test_setup_without_status_prefix_serves_only_metrics(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    app = web.Application()
    setup(app, nodes[0])
    async with TestClient(TestServer(app)) as http:
        assert app[NODE] is nodes[0]
        assert (await http.get("/metrics")).status == 200
        assert (await http.get("/status.json")).status == 404
    assert not nodes[0].running


def _a_client() -> ClusterClient:
    client = connect("unix:/tmp/lq-nobody.sock", Credentials("web", b"token-of-the-web-tier"))
    assert isinstance(client, ClusterClient)
    return client


def test_monitor_routes_on_a_client_app_are_refused_at_setup() -> None:
    app = web.Application()
    setup_client(app, _a_client())
    with pytest.raises(RuntimeError, match=r"links ClusterClient\('web'.* a client, which has "
                       r"neither: add them only to an app set up with setup\(app, node\)"):
        add_monitor_routes(app, status_prefix="/cluster")
    assert [r for r in app.router.routes() if r.resource is not None
            and r.resource.canonical in ("/metrics", "/cluster/")] == []


async def test_monitor_routes_on_a_client_app_are_refused_when_it_starts() -> None:
    client = _a_client()
    app = web.Application()
    add_monitor_routes(app)  # the client is linked after
    setup_client(app, client)
    runner = web.AppRunner(app)
    with pytest.raises(RuntimeError, match=r"a client, which has neither: add them only"):
        await runner.setup()
    await runner.cleanup()
    assert client.member is None  # refused before it linked


async def test_monitor_routes_without_a_node_are_refused_when_the_app_starts() -> None:
    app = web.Application()
    add_monitor_routes(app)
    runner = web.AppRunner(app)
    with pytest.raises(RuntimeError, match=r"no lazily-queue node on this app; set it up with "
                       r"lazily_queue.integrations.aiohttp.setup\(app, node\)"):
        await runner.setup()
    await runner.cleanup()
