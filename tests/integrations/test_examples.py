"""The examples in examples/, run as users run them (or their apps on a real cluster)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from types import ModuleType

import httpx
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import testing

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_embedded_example_is_short_and_durable(tmp_path: Path) -> None:
    source = EXAMPLES / "embedded.py"
    assert len(source.read_text().splitlines()) < 15
    for _ in range(2):  # the second run reopens the same data directory
        out = subprocess.run([sys.executable, str(source)], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "popped {'order': 1, 'item': 'tea'} - still queued: 0"
    assert (tmp_path / "embedded-data" / "raft").is_dir()


def test_pydantic_example_queues_models_through_a_serializer(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(EXAMPLES / "pydantic_models.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "resizing cat.png to 640px"


def test_testing_cluster_example_passes_as_a_script(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(EXAMPLES / "testing_cluster.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2 passed"


def test_clients_example_runs_as_a_script(tmp_path: Path) -> None:
    env = dict(os.environ, APP_CLUSTER_SECRET="example-cluster-secret",
               APP_WEB_TOKEN="example-web-token")
    out = subprocess.run([sys.executable, str(EXAMPLES / "clients.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "done {'resize': 'cat.png'} through member 1", "pending 0 in flight 0"]
    env.pop("APP_WEB_TOKEN")
    out = subprocess.run([sys.executable, str(EXAMPLES / "clients.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 1 and "export APP_CLUSTER_SECRET and APP_WEB_TOKEN" in out.stderr


async def test_job_api_on_three_nodes(tmp_path: Path) -> None:
    job_api = load("job_api")
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    apps = [job_api.create_app(node, workers=2) for node in nodes]
    async with AsyncExitStack() as stack:
        # like three servers starting at once: each lifespan waits for a leader
        lifespans = [app.router.lifespan_context(app) for app in apps]
        await asyncio.gather(*(lifespan.__aenter__() for lifespan in lifespans))
        for lifespan in lifespans:
            stack.push_async_exit(lifespan)
        await cluster.wait_for_leader()
        clients = [
            await stack.enter_async_context(httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test"))
            for app in apps
        ]
        assert (await clients[0].get("/jobs/999")).status_code == 404
        # One burst, so that jobs wait while workers are busy: posted one after another,
        # each could be done by the same worker before the next arrived.
        responses = await asyncio.gather(
            *(clients[n % 3].post("/jobs", json={"n": n}) for n in range(12)))
        assert [response.status_code for response in responses] == [202] * 12
        ids = [response.json()["job"] for response in responses]
        assert len(set(ids)) == 12
        assert (await clients[0].post("/jobs", json={"n": -1})).status_code == 422

        async def all_results(client: httpx.AsyncClient) -> dict[int, int]:
            found: dict[int, int] = {}
            async with asyncio.timeout(15):
                while len(found) < len(ids):
                    for job_id in ids:
                        response = await client.get(f"/jobs/{job_id}")
                        if response.status_code == 200:
                            found[job_id] = response.json()["result"]
                    await asyncio.sleep(0.05)
            return found

        for client in clients:  # every node answers for every job
            assert await all_results(client) == {job_id: n * n for n, job_id in enumerate(ids)}
        await cluster.settle()
        stats = (await clients[1].get("/stats")).json()
        assert stats["pending"] == 0 and stats["in_flight"] == 0 and stats["dead_letters"] == 0
        workers = {(await clients[0].get(f"/jobs/{j}")).json()["worker"] for j in ids}
        assert len(workers) > 1, "competing workers shared the jobs"
        status = (await clients[2].get("/cluster/status.json")).json()
        assert status["topics"]["results"]["subscribers"].keys() == {"api-1", "api-2", "api-3"}


async def test_job_api_as_a_client_leaves_no_subscription_when_it_stops() -> None:
    """A web worker's subscriber name is new at each start: one left behind would hold
    every later result back for good, a new one at every restart of the API."""
    from lazily_queue import ClientAccess, ClientGrant, Credentials, connect
    from tests.client.one_member import TOKEN, one_member

    job_api = load("job_api")
    grant = ClientGrant("web", TOKEN, produce=["*"], consume=["*"])
    async with one_member(ClientAccess([grant])) as member:
        assert member.listen is not None
        for _ in range(2):  # the API started and stopped twice
            app = job_api.create_app(connect([member.listen], Credentials("web", TOKEN)),
                                     workers=1)
            async with app.router.lifespan_context(app):
                assert member.topic("results").subscriptions()  # the worker follows it
        async with asyncio.timeout(5):
            while member.topic("results").subscriptions():  # noqa: ASYNC110 - plain state
                await asyncio.sleep(0.05)


async def test_sse_fanout_on_three_nodes(tmp_path: Path) -> None:
    sse = load("sse_fanout")
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(TestClient(TestServer(sse.create_app(n))))
                   for n in nodes]
        await cluster.wait_for_leader()
        streams = [await clients[0].get("/events"), await clients[2].get("/events")]
        for stream in streams:
            assert stream.headers["Content-Type"] == "text/event-stream"
            assert await stream.content.readline() == b": subscribed\n"
            assert await stream.content.readline() == b"\n"
        for text in ("hello", "world"):
            response = await clients[1].post("/publish", json={"text": text})
            assert response.status == 201
        for stream in streams:
            received = []
            async with asyncio.timeout(10):
                while len(received) < 2:
                    line = await stream.content.readline()
                    if line.startswith(b"data: "):
                        received.append(json.loads(line[6:]))
            assert received == [{"text": "hello"}, {"text": "world"}]
        await cluster.settle()
        chat = nodes[1].topic("chat")
        assert len(chat.subscriptions()) == 2
        streams[0].close()  # the client leaves: its ephemeral subscription goes
        async with asyncio.timeout(10):
            while True:
                await cluster.settle()
                if len(chat.subscriptions()) == 1:
                    break
                await asyncio.sleep(0.05)
        streams[1].close()


async def test_sse_fanout_forgets_a_client_that_left_a_quiet_topic(tmp_path: Path) -> None:
    """As ``web.run_app`` serves it (handlers are not cancelled when a client leaves): the
    heartbeat finds the closed connection without any message being published."""
    sse = load("sse_fanout")
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        runner = web.AppRunner(sse.create_app(node, heartbeat=0.1), shutdown_timeout=1)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(10):
                while await reader.readline() != b": subscribed\n":
                    pass
            chat = node.topic("chat")
            assert len(chat.subscriptions()) == 1
            writer.close()  # the client leaves; nothing is ever published
            async with asyncio.timeout(5):
                while chat.subscriptions():  # noqa: ASYNC110 - polls plain state
                    await asyncio.sleep(0.05)
            async with TestClient(TestServer(sse.create_app(node))) as http:
                for body in (b"{", b"[1]", b'{"txt": 1}'):
                    response = await http.post("/publish", data=body)
                    assert response.status == 400, body
        finally:
            await runner.cleanup()
