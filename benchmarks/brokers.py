"""The broker adapters' overhead: the peers workloads through ``lazily_queue.connect`` and
through the raw client, in the same run, on the same server.

    python benchmarks/brokers.py [--count N] [--repeat R] [--only nats,redis] [--json]

Servers: one ``nats-server -js`` (file storage; this JetStream acknowledges before
fsync) and one ``redis-server`` (``appendonly yes``, ``appendfsync always``), on free
loopback ports in temporary directories, always stopped. Workloads (100-byte payloads,
N per phase, as ``benchmarks/peers.py``): produce with 256 pushes in flight; end to end,
one consumer while 256 push; a work queue, 256 pushing and 8 workers claiming and
acking. Adapters: ``QueueCell.push`` / ``items(prefetch=100)`` and
``WorkQueueCell.push`` / ``deliveries(prefetch=100)``.

The raw clients do the work the adapters do, with the same guarantees:

- NATS: ``js.publish`` with a ``Nats-Msg-Id`` per publish, as the adapter's pushes
  carry one (they are idempotent: a push retried after a lost reply is stored once;
  JetStream keeps every id of the duplicate window, which costs the server a few
  microseconds per message); pull consumers fetching 100 and acknowledging each
  message with a confirmed ack (``ack_sync``, concurrently), as the adapters' pops and
  acks are confirmed (``msg.ack()`` is not). Produce is also run without ids
  (``raw without Nats-Msg-Id``), the cheaper and weaker raw publish, for reference.
- Redis: the queue workloads on a list, as the adapter's queue (``RPUSH`` pipelined 256
  at a time; ``BLMPOP`` of up to 100); the work queue on a stream and group
  (``XADD`` pipelined; each worker ``XAUTOCLAIM`` of expired leases and ``XREADGROUP
  COUNT 100`` in one pipeline, then ``XACK`` + ``XDEL`` of the batch in one pipeline,
  as the adapter reclaims expired leases and deletes acked entries). What the raw
  client still does not do: check that the acking worker holds the live lease (the
  adapter's settlement script does, per delivery). What it does more: its XAUTOCLAIM
  scans the pending entries on every claim, where the adapter scans them only once a
  lease may have expired (it keeps the earliest expiry).

Each workload runs ``--repeat`` times, raw and adapter alternating; the figures are
medians: the rate, and the CPU per message of this process (client) and of the server
process (from /proc, in clock ticks: use a ``--count`` of 10000 or more). ``cost`` is
raw rate / adapter rate (the target is <= 1.2); ``paired`` lists each run's ratio and
their median; ``cpu`` is the adapter's client + server CPU per message over the raw
client's. Other load on the machine moves the rates a lot (the CPU figures less).
With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peers_common import BATCH, INFLIGHT, PAYLOAD, rate, spread  # noqa: E402
from lazily_queue import connect  # noqa: E402
from lazily_queue.brokers.servers import NatsServer, RedisServer  # noqa: E402

WORKERS = 8
Workload = Callable[[str, int], Awaitable[float]]


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


# -- through the adapters ---------------------------------------------------------------


async def adapter_produce(url: str, count: int) -> float:
    async with connect(url) as client:
        q = client.queue(_name("produce"))
        await q.storage.declare()  # type: ignore[attr-defined]
        started = time.perf_counter()
        await spread(count, lambda: q.push(PAYLOAD))
        return rate(count, time.perf_counter() - started)


async def adapter_end_to_end(url: str, count: int) -> float:
    async with connect(url) as client:
        q = client.queue(_name("e2e"))
        await q.storage.declare()  # type: ignore[attr-defined]

        async def consume() -> None:
            got = 0
            async for _ in q.items(prefetch=BATCH):
                got += 1
                if got == count:
                    return

        started = time.perf_counter()
        consumer = asyncio.create_task(consume())
        await spread(count, lambda: q.push(PAYLOAD))
        await consumer
        return rate(count, time.perf_counter() - started)


async def adapter_work_queue(url: str, count: int) -> float:
    async with connect(url) as client:
        jobs = client.work_queue(_name("jobs"), visibility_timeout=60)
        await jobs.storage.declare()  # type: ignore[attr-defined]
        done = [0]
        finished = asyncio.Event()

        async def work(worker: str) -> None:
            async for job in jobs.deliveries(worker, prefetch=BATCH):
                async with job:
                    done[0] += 1
                if done[0] >= count:
                    finished.set()

        started = time.perf_counter()
        workers = [asyncio.create_task(work(f"w{w}")) for w in range(WORKERS)]
        await spread(count, lambda: jobs.push(PAYLOAD))
        await finished.wait()
        elapsed = time.perf_counter() - started
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        return rate(count, elapsed)


# -- raw NATS -------------------------------------------------------------------------


async def _nats_stream(url: str, retention: str) -> tuple[Any, Any, str]:
    import nats
    from nats.js.api import RetentionPolicy, StorageType

    nc = await nats.connect(url)
    js = nc.jetstream(timeout=30)
    name = _name("RAW")
    await js.add_stream(name=name, subjects=[name], storage=StorageType.FILE,
                        retention=RetentionPolicy(retention))
    return nc, js, name


async def _nats_consume(sub: Any, done: Callable[[], bool], delivered: Callable[[], None]) -> None:
    import nats.errors

    while not done():
        try:
            msgs = await sub.fetch(BATCH, timeout=1.0)
        except (nats.errors.TimeoutError, TimeoutError):
            continue
        # confirmed acks, as the adapter's pops and acks (msg.ack() is not confirmed)
        await asyncio.gather(*(msg.ack_sync() for msg in msgs))
        for _ in msgs:
            delivered()


def _with_id(js: Any, subject: str) -> Callable[[], Awaitable[Any]]:
    """A publish carrying a ``Nats-Msg-Id`` of its own, as the adapter's pushes do."""
    prefix, counter = uuid.uuid4().hex[:16], itertools.count()
    return lambda: js.publish(subject, PAYLOAD,
                              headers={"Nats-Msg-Id": f"{prefix}{next(counter):x}"})


async def nats_produce(url: str, count: int) -> float:
    nc, js, name = await _nats_stream(url, "workqueue")
    try:
        started = time.perf_counter()
        await spread(count, _with_id(js, name))
        return rate(count, time.perf_counter() - started)
    finally:
        await nc.close()


async def nats_produce_without_ids(url: str, count: int) -> float:
    """Raw publishes without ``Nats-Msg-Id`` (a retried one may be stored twice)."""
    nc, js, name = await _nats_stream(url, "workqueue")
    try:
        started = time.perf_counter()
        await spread(count, lambda: js.publish(name, PAYLOAD))
        return rate(count, time.perf_counter() - started)
    finally:
        await nc.close()


async def nats_end_to_end(url: str, count: int) -> float:
    nc, js, name = await _nats_stream(url, "workqueue")
    try:
        sub = await js.pull_subscribe(name, durable="consumer", stream=name)
        got = [0]

        def delivered() -> None:
            got[0] += 1

        started = time.perf_counter()
        consumer = asyncio.create_task(_nats_consume(sub, lambda: got[0] >= count, delivered))
        await spread(count, _with_id(js, name))
        await consumer
        return rate(count, time.perf_counter() - started)
    finally:
        await nc.close()


async def nats_work_queue(url: str, count: int) -> float:
    nc, js, name = await _nats_stream(url, "workqueue")
    try:
        subs = [await js.pull_subscribe(name, durable="workers", stream=name)
                for _ in range(WORKERS)]
        acked = [0]
        finished = asyncio.Event()

        def delivered() -> None:
            acked[0] += 1
            if acked[0] >= count:
                finished.set()

        started = time.perf_counter()
        workers = [asyncio.create_task(_nats_consume(s, finished.is_set, delivered))
                   for s in subs]
        await spread(count, _with_id(js, name))
        await finished.wait()
        elapsed = time.perf_counter() - started
        await asyncio.gather(*workers, return_exceptions=True)
        return rate(count, elapsed)
    finally:
        await nc.close()


# -- raw Redis ------------------------------------------------------------------------


async def _xadd_pipelined(client: Any, stream: str, count: int) -> None:
    for start in range(0, count, INFLIGHT):
        pipe = client.pipeline(transaction=False)
        for _ in range(min(INFLIGHT, count - start)):
            pipe.xadd(stream, {b"d": PAYLOAD})
        await pipe.execute()


async def _redis_consume(client: Any, stream: str, consumer: str, done: Callable[[], bool],
                         delivered: Callable[[int], None]) -> None:
    while not done():
        # leases that expired (a worker died) first, as the adapter's claims do
        pipe = client.pipeline(transaction=False)
        pipe.xautoclaim(stream, "g", consumer, 60_000, "0-0", count=BATCH)
        pipe.xreadgroup("g", consumer, {stream: ">"}, count=BATCH, block=1000)
        reclaimed, reply = await pipe.execute()
        ids = [entry for entry, _ in reclaimed[1]]
        ids += [entry for _, entries in reply or [] for entry, _ in entries]
        if ids:
            # acked entries are deleted, as the adapter's work queue does
            pipe = client.pipeline(transaction=False)
            pipe.xack(stream, "g", *ids)
            pipe.xdel(stream, *ids)
            await pipe.execute()
            delivered(len(ids))


async def _rpush_pipelined(client: Any, key: str, count: int) -> None:
    for start in range(0, count, INFLIGHT):
        pipe = client.pipeline(transaction=False)
        for _ in range(min(INFLIGHT, count - start)):
            pipe.rpush(key, PAYLOAD)
        await pipe.execute()


async def redis_produce(url: str, count: int) -> float:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, max_connections=64)
    try:
        started = time.perf_counter()
        await _rpush_pipelined(client, _name("produce"), count)
        return rate(count, time.perf_counter() - started)
    finally:
        await client.aclose()


async def _redis_group(url: str) -> tuple[Any, str]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, max_connections=64)
    stream = _name("stream")
    await client.xgroup_create(stream, "g", id="$", mkstream=True)
    return client, stream


async def redis_end_to_end(url: str, count: int) -> float:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, max_connections=64)
    key = _name("list")
    try:
        async def consume() -> None:
            got = 0
            while got < count:
                reply: Any = await client.blmpop(1, 1, key, direction="LEFT", count=BATCH)
                got += len(reply[1]) if reply else 0

        started = time.perf_counter()
        consumer = asyncio.create_task(consume())
        await _rpush_pipelined(client, key, count)
        await consumer
        return rate(count, time.perf_counter() - started)
    finally:
        await client.aclose()


async def redis_work_queue(url: str, count: int) -> float:
    client, stream = await _redis_group(url)
    try:
        acked = [0]
        finished = asyncio.Event()

        def delivered(n: int) -> None:
            acked[0] += n
            if acked[0] >= count:
                finished.set()

        started = time.perf_counter()
        workers = [asyncio.create_task(_redis_consume(client, stream, f"w{w}",
                                                      finished.is_set, delivered))
                   for w in range(WORKERS)]
        await _xadd_pipelined(client, stream, count)
        await finished.wait()
        elapsed = time.perf_counter() - started
        await asyncio.gather(*workers, return_exceptions=True)
        return rate(count, elapsed)
    finally:
        await client.aclose()


RAW: dict[str, dict[str, Workload]] = {
    "nats": {"produce": nats_produce, "end_to_end": nats_end_to_end,
             "work_queue": nats_work_queue},
    "redis": {"produce": redis_produce, "end_to_end": redis_end_to_end,
              "work_queue": redis_work_queue},
}
ADAPTER: dict[str, Workload] = {"produce": adapter_produce, "end_to_end": adapter_end_to_end,
                                "work_queue": adapter_work_queue}


def _server_cpu(server: Any) -> float:
    """CPU seconds the server process used so far (Linux /proc)."""
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed(run: Workload, server: Any, count: int) -> tuple[float, float, float]:
    """(rate, client CPU us per message, server CPU us per message)."""
    cpu, server_cpu = time.process_time(), _server_cpu(server)
    per_s = await run(server.url, count)
    return (per_s, (time.process_time() - cpu) / count * 1e6,
            (_server_cpu(server) - server_cpu) / count * 1e6)


async def measure(kind: str, count: int, repeat: int) -> dict[str, Any]:
    """Each workload ``repeat`` times, raw and adapter alternating; medians."""
    server = RedisServer() if kind == "redis" else NatsServer()
    figures: dict[str, Any] = {}
    async with server:
        for workload, raw in RAW[kind].items():
            runs: dict[str, list[tuple[float, float, float]]] = {"raw": [], "adapter": []}
            for _ in range(repeat):
                runs["raw"].append(await _timed(raw, server, count))
                runs["adapter"].append(await _timed(ADAPTER[workload], server, count))
            row: dict[str, Any] = {}
            for side, samples in runs.items():
                row[f"{side}_per_s"] = int(statistics.median(r[0] for r in samples))
                row[f"{side}_runs_per_s"] = [int(r[0]) for r in samples]
                row[f"{side}_client_cpu_us"] = round(statistics.median(r[1] for r in samples), 1)
                row[f"{side}_server_cpu_us"] = round(statistics.median(r[2] for r in samples), 1)
            row["cost_ratio"] = round(row["raw_per_s"] / row["adapter_per_s"], 2)
            row["cpu_ratio"] = round(
                (row["adapter_client_cpu_us"] + row["adapter_server_cpu_us"])
                / (row["raw_client_cpu_us"] + row["raw_server_cpu_us"]), 2)
            row["paired_ratios"] = [round(r[0] / a[0], 2)
                                    for r, a in zip(runs["raw"], runs["adapter"], strict=True)]
            row["median_paired_ratio"] = statistics.median(row["paired_ratios"])
            if kind == "nats" and workload == "produce":
                bare = [await _timed(nats_produce_without_ids, server, count)
                        for _ in range(repeat)]
                row["raw_without_msg_ids_per_s"] = int(statistics.median(r[0] for r in bare))
                row["raw_without_msg_ids_server_cpu_us"] = round(
                    statistics.median(r[2] for r in bare), 1)
            figures[workload] = row
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="nats,redis")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {"count": args.count, "repeat": args.repeat}
    for kind in args.only.split(","):
        results[kind] = asyncio.run(measure(kind, args.count, args.repeat))
        print(f"{kind}: {args.count} messages per phase, medians of {args.repeat} runs "
              "(CPU in microseconds per message: client / server)")
        for workload, f in results[kind].items():
            print(f"  {workload:<11} raw {f['raw_per_s']:>7,}/s "
                  f"({f['raw_client_cpu_us']:>5} / {f['raw_server_cpu_us']:>5})  adapter "
                  f"{f['adapter_per_s']:>7,}/s ({f['adapter_client_cpu_us']:>5} / "
                  f"{f['adapter_server_cpu_us']:>5})  cost x{f['cost_ratio']} "
                  f"(paired: median x{f['median_paired_ratio']}, {f['paired_ratios']}) "
                  f"cpu x{f['cpu_ratio']}")
            if "raw_without_msg_ids_per_s" in f:
                print(f"  {'':<11} raw without Nats-Msg-Id {f['raw_without_msg_ids_per_s']:,}/s "
                      f"(server {f['raw_without_msg_ids_server_cpu_us']} us per message)")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
