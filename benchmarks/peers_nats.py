"""NATS JetStream R3 for ``benchmarks/peers.py``: three clustered ``nats-server`` processes
on loopback, file storage, streams with ``num_replicas=3``, nats-py (asyncio) clients.

Produce is ``js.publish`` with 256 in flight; consumers are pull consumers fetching
batches of :data:`~benchmarks.peers_common.BATCH` and acking every message with
``msg.ack()`` (nats-py's usual ack; the server is not asked to confirm it). The work
queue is a work-queue-retention stream whose one pull consumer is shared by 8 workers;
fan-out is 4 durable consumers on a limits stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType

from benchmarks.peers_common import (
    BATCH,
    PAYLOAD,
    Server,
    free_port,
    listening,
    rate,
    serial_latency,
    spread,
)

FETCH_TIMEOUT = 1.0


#: JetStream's error code for "no suitable peers for placement".
NO_PEERS_FOR_PLACEMENT = 10005


def _config(root: Path, index: int, ports: list[int], routes: list[int], sync: bool) -> Path:
    others = ", ".join(f"nats-route://127.0.0.1:{p}" for i, p in enumerate(routes) if i != index)
    store = root / f"store{index}"
    sync_line = " sync_interval: always" if sync else ""
    text = (f"server_name: n{index}\nlisten: 127.0.0.1:{ports[index]}\n"
            f'jetstream {{ store_dir: "{store}"{sync_line} }}\n'
            f"cluster {{ name: peers, listen: 127.0.0.1:{routes[index]}, "
            f"routes: [{others}] }}\n")
    path = root / f"n{index}.conf"
    path.write_text(text)
    return path


def supports_sync_always(root: Path) -> bool:
    """Whether this nats-server accepts ``jetstream { sync_interval: always }``."""
    path = _config(root, 0, [free_port()], [free_port()], True)
    done = subprocess.run(["nats-server", "-t", "-c", str(path)], capture_output=True,
                          timeout=30, check=False)
    return done.returncode == 0


def server_version() -> str:
    done = subprocess.run(["nats-server", "--version"], capture_output=True, text=True,
                          timeout=30, check=False)
    return done.stdout.strip() or "nats-server (unknown version)"


def durability(sync: bool) -> str:
    """How the servers of :func:`cluster` acknowledge, for a benchmark's notes."""
    if sync:
        return "`sync_interval: always`: fsync before every acknowledgement"
    return ("acknowledges before fsync (JetStream's default: `sync_interval` 2 min; this "
            "server has no `sync_interval: always`, which needs nats-server >= 2.10)")


@dataclass(frozen=True)
class Cluster:
    """Three clustered servers started by :func:`cluster`."""

    urls: list[str]
    #: Whether they fsync before every acknowledgement (``sync_interval: always``).
    sync: bool
    nodes: list[Server]


@contextlib.asynccontextmanager
async def cluster(root: Path) -> AsyncIterator[Cluster]:
    """Three clustered ``nats-server`` processes (JetStream, file storage in ``root``,
    which is created; fsync always when the server has it), each listening; every one
    is stopped however the block ends."""
    root.mkdir(parents=True)  # noqa: ASYNC240 - set-up
    sync = supports_sync_always(root)
    ports: list[int] = []

    def build(attempt: int) -> tuple[list[Server], list[int]]:
        # a fresh directory for each attempt: no store left by servers of the one before
        where = root / f"attempt{attempt}" if attempt else root
        where.mkdir(exist_ok=True)
        ports[:] = [free_port() for _ in range(3)]
        routes = [free_port() for _ in range(3)]
        return [Server(["nats-server", "-c", str(_config(where, i, ports, routes, sync))],
                       where / f"n{i}.log") for i in range(3)], list(ports)

    async with listening(build) as nodes:
        yield Cluster([f"nats://127.0.0.1:{p}" for p in ports], sync, nodes)


async def connect_ready(urls: list[str]) -> Client:
    """A nats-py connection to ``urls`` once the cluster can create replicated streams."""
    nc = await nats.connect(servers=urls, connect_timeout=5, allow_reconnect=False)
    try:
        await stream(nc.jetstream(timeout=2), "READY", RetentionPolicy.LIMITS)
    except BaseException:
        await nc.close()
        raise
    return nc


async def stream(js: JetStreamContext, name: str, retention: RetentionPolicy) -> str:
    """Create stream ``name`` (subject = name) with 3 replicas; retry while the cluster
    forms its JetStream meta group (give a ``js`` with a short timeout for that)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            await js.add_stream(name=name, subjects=[name], num_replicas=3,
                                storage=StorageType.FILE, retention=retention)
            return name
        except (nats.js.errors.ServiceUnavailableError, nats.js.errors.ServerError,
                nats.errors.TimeoutError, nats.errors.NoRespondersError):
            if time.monotonic() > deadline:
                raise
        except nats.js.errors.BadRequestError as exc:
            # The meta group has a leader that has not yet heard from enough servers to
            # place three replicas.
            if exc.err_code != NO_PEERS_FOR_PLACEMENT or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.25)


async def _consume(sub: JetStreamContext.PullSubscription, done: Callable[[], bool],
                   delivered: Callable[[], None]) -> None:
    """Fetch, ack each message, call ``delivered`` per message, until ``done()``."""
    while not done():
        try:
            msgs = await sub.fetch(BATCH, timeout=FETCH_TIMEOUT)
        except (nats.errors.TimeoutError, TimeoutError):
            continue
        for msg in msgs:
            await msg.ack()
            delivered()


async def produce(js: JetStreamContext, count: int) -> dict[str, Any]:
    subject = await stream(js, "PRODUCE", RetentionPolicy.LIMITS)
    started = time.perf_counter()
    await spread(count, lambda: js.publish(subject, PAYLOAD))
    return {"produce_per_s": rate(count, time.perf_counter() - started)}


async def end_to_end(js: JetStreamContext, count: int) -> dict[str, Any]:
    subject = await stream(js, "E2E", RetentionPolicy.LIMITS)
    sub = await js.pull_subscribe(subject, durable="consumer", stream=subject)
    got = [0]

    def delivered() -> None:
        got[0] += 1

    consumer = asyncio.create_task(_consume(sub, lambda: got[0] >= count, delivered))
    started = time.perf_counter()
    await spread(count, lambda: js.publish(subject, PAYLOAD))
    await consumer
    return {"end_to_end_per_s": rate(count, time.perf_counter() - started)}


async def work_queue(js: JetStreamContext, count: int) -> dict[str, Any]:
    subject = await stream(js, "JOBS", RetentionPolicy.WORK_QUEUE)
    subs = [await js.pull_subscribe(subject, durable="workers", stream=subject)
            for _ in range(8)]
    acked = [0]
    finished = asyncio.Event()

    def delivered() -> None:
        acked[0] += 1
        if acked[0] >= count:
            finished.set()

    workers = [asyncio.create_task(_consume(sub, finished.is_set, delivered)) for sub in subs]
    try:
        started = time.perf_counter()
        await spread(count, lambda: js.publish(subject, PAYLOAD))
        await finished.wait()
        return {"work_queue_per_s": rate(count, time.perf_counter() - started)}
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def fanout(js: JetStreamContext, count: int) -> dict[str, Any]:
    subject = await stream(js, "FANOUT", RetentionPolicy.LIMITS)
    subs = [await js.pull_subscribe(subject, durable=f"subscriber{s}", stream=subject)
            for s in range(4)]
    got = [0, 0, 0, 0]

    def reader(s: int) -> asyncio.Task[None]:
        def delivered() -> None:
            got[s] += 1

        return asyncio.create_task(_consume(subs[s], lambda: got[s] >= count, delivered))

    readers = [reader(s) for s in range(4)]
    started = time.perf_counter()
    await spread(count, lambda: js.publish(subject, PAYLOAD))
    await asyncio.gather(*readers)
    return {"fanout_per_s": rate(4 * count, time.perf_counter() - started)}


async def one_in_flight(js: JetStreamContext, samples: int) -> dict[str, Any]:
    subject = await stream(js, "LATENCY", RetentionPolicy.LIMITS)
    figures = await serial_latency(samples, lambda: js.publish(subject, PAYLOAD))
    return {"p50_ms_3": figures["p50_ms"], "p99_ms_3": figures["p99_ms"]}


async def run(root: Path, count: int, samples: int, latency: bool = False) -> dict[str, Any]:
    """Every workload, or with ``latency`` the 1-in-flight latency only."""
    figures: dict[str, Any] = {}
    async with cluster(root) as nodes:
        nc = await connect_ready(nodes.urls)
        try:
            js = nc.jetstream(timeout=30)
            if not latency:
                figures.update(await produce(js, count))
                figures.update(await end_to_end(js, count))
                figures.update(await work_queue(js, count))
                figures.update(await fanout(js, count))
            figures.update(await one_in_flight(js, samples))
        finally:
            await nc.close()
    figures["notes"] = [
        f"NATS JetStream R3 ({server_version()}): 3 clustered servers on loopback, file "
        f"storage, {durability(nodes.sync)}; pull consumers fetch {BATCH} at a time and ack "
        "each message without waiting for a confirmation"]
    return figures
