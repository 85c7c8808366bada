"""Redis Streams for ``benchmarks/peers.py``: one ``redis-server`` with ``appendonly yes``
and ``appendfsync always`` (a reply leaves after the AOF fsync), redis-py asyncio.

Produce is XADD in pipelines of 256 (256 in flight); consumers are XREADGROUP with COUNT
:data:`~benchmarks.peers_common.BATCH` and one XACK per batch; the work queue is one
consumer group shared by 8 consumers; fan-out is one consumer group per subscriber.
Redis is a single server, so its 1-in-flight latency fills both latency rows.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from benchmarks.peers_common import (
    BATCH,
    INFLIGHT,
    PAYLOAD,
    Server,
    free_port,
    listening,
    rate,
    serial_latency,
)

Client = aioredis.Redis
FIELDS: dict[Any, Any] = {b"d": PAYLOAD}


async def _xadd_pipelined(client: Client, stream: str, count: int) -> None:
    for start in range(0, count, INFLIGHT):
        pipe = client.pipeline(transaction=False)
        for _ in range(min(INFLIGHT, count - start)):
            pipe.xadd(stream, FIELDS)
        await pipe.execute()


async def _consume(client: Client, stream: str, group: str, consumer: str,
                   done: Callable[[], bool], delivered: Callable[[int], None]) -> None:
    """XREADGROUP a batch, XACK it, report its size, until ``done()``."""
    while not done():
        reply: Any = await client.xreadgroup(group, consumer, {stream: ">"}, count=BATCH,
                                             block=1000)
        ids = [entry_id for _, entries in reply or [] for entry_id, _ in entries]
        if ids:
            await client.xack(stream, group, *ids)
            delivered(len(ids))


async def produce(client: Client, count: int) -> dict[str, Any]:
    started = time.perf_counter()
    await _xadd_pipelined(client, "produce", count)
    return {"produce_per_s": rate(count, time.perf_counter() - started)}


async def end_to_end(client: Client, count: int) -> dict[str, Any]:
    await client.xgroup_create("e2e", "consumers", id="$", mkstream=True)
    got = [0]

    def delivered(n: int) -> None:
        got[0] += n

    consumer = asyncio.create_task(
        _consume(client, "e2e", "consumers", "c", lambda: got[0] >= count, delivered))
    started = time.perf_counter()
    await _xadd_pipelined(client, "e2e", count)
    await consumer
    return {"end_to_end_per_s": rate(count, time.perf_counter() - started)}


async def work_queue(client: Client, count: int) -> dict[str, Any]:
    await client.xgroup_create("jobs", "workers", id="$", mkstream=True)
    acked = [0]
    finished = asyncio.Event()

    def delivered(n: int) -> None:
        acked[0] += n
        if acked[0] >= count:
            finished.set()

    workers = [asyncio.create_task(_consume(client, "jobs", "workers", f"w{w}",
                                            finished.is_set, delivered)) for w in range(8)]
    try:
        started = time.perf_counter()
        await _xadd_pipelined(client, "jobs", count)
        await finished.wait()
        return {"work_queue_per_s": rate(count, time.perf_counter() - started)}
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def fanout(client: Client, count: int) -> dict[str, Any]:
    got = [0, 0, 0, 0]
    for s in range(4):
        await client.xgroup_create("fan", f"subscriber{s}", id="$", mkstream=True)

    def reader(s: int) -> asyncio.Task[None]:
        def delivered(n: int) -> None:
            got[s] += n

        return asyncio.create_task(_consume(client, "fan", f"subscriber{s}", "c",
                                            lambda: got[s] >= count, delivered))

    readers = [reader(s) for s in range(4)]
    started = time.perf_counter()
    await _xadd_pipelined(client, "fan", count)
    await asyncio.gather(*readers)
    return {"fanout_per_s": rate(4 * count, time.perf_counter() - started)}


async def one_member(client: Client, samples: int) -> dict[str, Any]:
    figures = await serial_latency(samples, lambda: client.xadd("latency", FIELDS))
    await client.xgroup_create("serial", "g", id="0", mkstream=True)
    await _xadd_pipelined(client, "serial", samples)

    async def claim_ack() -> None:
        reply: Any = await client.xreadgroup("g", "c", {"serial": ">"}, count=1)
        entry_id = reply[0][1][0][0]  # [[stream, [(id, fields)]]]
        await client.xack("serial", "g", entry_id)

    started = time.perf_counter()
    for _ in range(samples):
        await claim_ack()
    serial = rate(samples, time.perf_counter() - started)
    p50, p99 = figures["p50_ms"], figures["p99_ms"]
    return {"p50_ms_3": p50, "p99_ms_3": p99, "p50_ms_1": p50, "p99_ms_1": p99,
            "serial_claim_ack_per_s_1": serial}


def server_version() -> str:
    done = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                          timeout=30, check=False)
    words = done.stdout.split()
    version = next((w.removeprefix("v=") for w in words if w.startswith("v=")), "?")
    return f"redis-server {version}"


async def run(root: Path, count: int, samples: int, latency: bool = False) -> dict[str, Any]:
    """Every workload, or with ``latency`` the 1-in-flight latency (and serial) only."""
    root.mkdir(parents=True)  # noqa: ASYNC240 - set-up
    port = 0

    def build(attempt: int) -> tuple[list[Server], list[int]]:
        nonlocal port
        port = free_port()
        return [Server(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                        "--dir", str(root), "--appendonly", "yes", "--appendfsync", "always",
                        "--save", "", "--daemonize", "no"], root / "redis.log")], [port]

    figures: dict[str, Any] = {}
    async with listening(build):
        client = aioredis.Redis(host="127.0.0.1", port=port, max_connections=64)
        try:
            await client.ping()
            fsync = await client.config_get("appendfsync")
            if fsync.get("appendfsync") not in ("always", b"always"):
                raise RuntimeError(f"redis-server runs with appendfsync {fsync}, not always")
            if not latency:
                figures.update(await produce(client, count))
                figures.update(await end_to_end(client, count))
                figures.update(await work_queue(client, count))
                figures.update(await fanout(client, count))
            figures.update(await one_member(client, samples))
        finally:
            await client.aclose()
    figures["notes"] = [
        f"Redis Streams ({server_version()}): one server, appendonly yes, appendfsync "
        f"always (fsync before every reply); XADD pipelined {INFLIGHT} at a time, "
        f"XREADGROUP COUNT {BATCH} with one XACK per batch; being one server, its "
        "1-in-flight latency (XADD) fills both latency rows and its serial row is "
        "XREADGROUP COUNT 1 + XACK"]
    return figures
