"""Clients as real processes of a real cluster: the FastAPI job API under
``uvicorn --workers 4`` (every web worker a client, none a member), a plain script
producer, consumer-group members as client processes, the aiohttp SSE fan-out, and a
member SIGKILLed mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import connect
from tests.cli.node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TOKENS = {"web": "token-of-the-web-tier", "producer": "token-of-the-producer",
          "sse": "token-of-the-sse-app", "checker": "token-of-the-test",
          "consumer": "token-of-the-group-members"}
GRANTS = {"web": ('["jobs", "results"]', '["jobs", "results"]'), "producer": ('["jobs"]', "[]"),
          "sse": ('["chat"]', '["chat"]'), "checker": ('["orders"]', '["*"]'),
          "consumer": ("[]", '["orders"]')}


def _clients() -> str:
    tables = []
    for name, (produce, consume) in GRANTS.items():
        tables += ["[[client]]", f'name = "{name}"', f'token_env = "TOKEN_{name.upper()}"',
                   f"produce = {produce}", f"consume = {consume}"]
    return "\n".join(tables)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, **{f"TOKEN_{n.upper()}": t for n, t in TOKENS.items()}, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def members(short_tmp: Path) -> AsyncIterator[tuple[list[NodeProc], list[str]]]:
    peers = unix_peers(short_tmp)
    configs = [write_config(short_tmp / f"n{i}.toml", i, peers, extra=_clients())
               for i in (1, 2, 3)]
    procs = [NodeProc(config, env=_env()) for config in configs]
    try:
        for proc in procs:
            await asyncio.to_thread(proc.wait_ready)
        for proc in procs:
            await asyncio.to_thread(proc.wait_line, "leader ")
        yield procs, list(peers.values())
    finally:
        for proc in procs:
            await asyncio.to_thread(proc.terminate)


def _leader(procs: list[NodeProc]) -> NodeProc:
    alive = [p for p in procs if p.proc.poll() is None]
    leader = wait_for(lambda: alive[0].status().get("leader"), what="a leader")
    return procs[int(leader) - 1]


async def test_job_api_under_uvicorn_workers_with_a_script_producer_and_a_member_killed(
    members: tuple[list[NodeProc], list[str]], short_tmp: Path
) -> None:
    procs, addresses = members
    port = _free_port()
    log = (short_tmp / "uvicorn.log").open("wb")
    uvicorn = subprocess.Popen(  # noqa: ASYNC220 - the web tier runs beside the test
        [sys.executable, "-m", "uvicorn", "--workers", "4", "--factory", "job_api:client_app",
         "--app-dir", str(EXAMPLES), "--host", "127.0.0.1", "--port", str(port)],
        env=_env(JOB_API_MEMBERS=",".join(addresses), JOB_API_TOKEN=TOKENS["web"]),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        async with connect(addresses, ("checker", TOKENS["checker"])) as checker, \
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                                  limits=httpx.Limits(max_keepalive_connections=0)) as http:
            results = checker.topic("results")
            await results.subscribe("checker")  # before any job: it sees every result
            ready: set[str] = set()
            async with asyncio.timeout(60):
                while len(ready) < 4:  # every web worker serves (a connection per request)
                    try:
                        response = await http.get("/stats")
                        if response.status_code == 200:
                            ready.add(response.json()["client"])
                    except httpx.TransportError:
                        await asyncio.sleep(0.2)
            posted: dict[int, int] = {}
            by: set[str] = set()
            killed: list[NodeProc] = []

            async def post(n: int) -> None:
                response = await http.post("/jobs", json={"n": n})
                assert response.status_code == 202, response.text
                body = response.json()
                posted[n] = body["job"]
                by.add(body["by"])
                if len(posted) == 120 and not killed:  # mid-run: the members' leader dies
                    killed.append(_leader(procs))
                    killed[0].proc.kill()

            producer = await asyncio.create_subprocess_exec(
                sys.executable, str(EXAMPLES / "client_producer.py"), *addresses,
                "--count", "40", "--first", "1000", env=_env(PRODUCER_TOKEN=TOKENS["producer"]),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            lanes = [range(k, 300, 12) for k in range(12)]

            async def lane(numbers: range) -> None:
                for n in numbers:
                    await post(n)

            await asyncio.gather(*(lane(numbers) for numbers in lanes))
            out, err = await producer.communicate()
            assert producer.returncode == 0, err.decode()
            scripted = [int(line.split()[-1]) for line in out.decode().splitlines()]
            assert len(scripted) == 40 and killed

            expected = set(range(300)) | set(range(1000, 1040))
            seen: dict[int, set[int]] = {}
            items: list[int] = []
            workers: set[str] = set()
            async with asyncio.timeout(120):
                async for result in results.stream("checker"):
                    seen.setdefault(result["n"], set()).add(result["job"])
                    items.append(result["job"])
                    workers.add(result["worker"].rsplit("-w", 1)[0])
                    if set(seen) == expected:
                        break
            # nothing lost: every job has its result; nothing duplicated: one item per job
            assert all(len(jobs) == 1 for jobs in seen.values()), seen
            assert {next(iter(seen[n])) for n in range(300)} == set(posted.values())
            assert {next(iter(seen[n])) for n in range(1000, 1040)} == set(scripted)
            assert len(by) == 4, f"pushes came from {by}, not from every web worker"
            assert len(workers) > 1, "the web workers shared the jobs"
            jobs = checker.work_queue("jobs", visibility_timeout=10, max_deliveries=5)
            jobs.pending_len()  # mirror it

            async def settled() -> bool:
                await checker.barrier()
                return (jobs.pending_len(), jobs.in_flight_len(), jobs.dead_letter_len()) == (
                    0, 0, 0)

            async with asyncio.timeout(60):
                while not await settled():  # noqa: ASYNC110 - polls the replicated state
                    await asyncio.sleep(0.2)
            assert len(items) == len(set(items)) == 340, "a job was delivered twice"
    finally:
        uvicorn.terminate()
        try:
            uvicorn.wait(30)
        except subprocess.TimeoutExpired:
            uvicorn.kill()
            uvicorn.wait()
        log.close()
    text = (short_tmp / "uvicorn.log").read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


async def test_group_members_as_client_processes_and_a_member_killed(
    members: tuple[list[NodeProc], list[str]],
) -> None:
    procs, addresses = members
    names = [("billing", "billing-1"), ("billing", "billing-2"), ("billing", "billing-3"),
             ("audit", "audit-1")]
    consumers = [await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLES / "group_consumer.py"), *addresses, "--client",
        "consumer", "--group", group, "--member", member, env=_env(GROUP_TOKEN=TOKENS[
            "consumer"]), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        for group, member in names]
    settled: dict[str, list[tuple[int, str]]] = {"billing": [], "audit": []}
    joined: list[str] = []
    everything = list(range(300))
    all_joined, all_settled = asyncio.Event(), asyncio.Event()

    async def read(proc: asyncio.subprocess.Process, group: str) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode().split()
            if line[0] == "joined":
                joined.append(line[-1])
                if len(joined) == len(names):
                    all_joined.set()
            elif line[0] == "settled":
                settled[group].append((json.loads(line[1]), line[-1]))
                if all(sorted(v for v, _ in s) == everything for s in settled.values()):
                    all_settled.set()

    errors: list[bytes] = []

    async def read_errors(proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        errors.append(await proc.stderr.read())

    readers = [asyncio.create_task(read(p, g)) for p, (g, _) in zip(consumers, names,
                                                                      strict=True)]
    readers += [asyncio.create_task(read_errors(p)) for p in consumers]
    try:
        async with connect(addresses, ("checker", TOKENS["checker"])) as checker:
            async with asyncio.timeout(60):
                await all_joined.wait()  # every member joined before the publishes
            orders = checker.topic("orders")
            for n in range(300):
                if n == 150:  # mid-run: the members' leader dies
                    _leader(procs).proc.kill()
                await orders.publish(n)
            async with asyncio.timeout(120):
                await all_settled.wait()
            groups = {g: checker.topic("orders").group(g, visibility_timeout=10,
                                                       max_deliveries=5)
                      for g in ("billing", "audit")}

            async def lags() -> list[int]:
                await checker.barrier()
                return [g.lag() for g in groups.values()]

            async with asyncio.timeout(60):
                while await lags() != [0, 0]:  # noqa: ASYNC110 - polls the replicated state
                    await asyncio.sleep(0.2)  # every element acked, by both groups
    finally:
        for proc in consumers:
            if proc.returncode is None:
                proc.terminate()
        await asyncio.gather(*(p.wait() for p in consumers))
        await asyncio.gather(*readers, return_exceptions=True)
    # nothing lost, nothing doubled: each group settled every element once
    assert sorted(v for v, _ in settled["billing"]) == everything, "a billing element twice"
    assert sorted(v for v, _ in settled["audit"]) == everything, "an audit element twice"
    assert len({m for _, m in settled["billing"]}) > 1, "the billing members shared them"
    assert not any(b"Traceback" in e for e in errors), errors


async def test_sse_fanout_through_a_client(members: tuple[list[NodeProc], list[str]]) -> None:
    sse = _load("sse_fanout")
    _, addresses = members
    app = sse.create_app(connect(addresses, ("sse", TOKENS["sse"])))
    async with TestClient(TestServer(app)) as web:
        streams = [await web.get("/events"), await web.get("/events")]
        for stream in streams:
            assert await stream.content.readline() == b": subscribed\n"
            assert await stream.content.readline() == b"\n"
        for text in ("hello", "world"):
            assert (await web.post("/publish", json={"text": text})).status == 201
        for stream in streams:
            received: list[Any] = []
            async with asyncio.timeout(20):  # a hang detector, not a speed check
                while len(received) < 2:
                    line = await stream.content.readline()
                    if line.startswith(b"data: "):
                        received.append(json.loads(line[6:]))
            assert received == [{"text": "hello"}, {"text": "world"}]
            stream.close()


def _load(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"client_example_{name}",
                                                  EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
