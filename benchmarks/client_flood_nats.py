"""NATS JetStream R3 under ``benchmarks/client_flood.py``'s flood: the same workload
against three clustered ``nats-server`` processes (:func:`benchmarks.peers_nats.cluster`:
file storage, ``sync_interval: always`` when the server has it).

A probe nats-py connection in this process publishes to stream ``PROBE`` one message at
a time (``js.publish``, waiting for each acknowledgement), first alone, then while
flooder processes (each with ``clients`` connections of ``in_flight`` publishes
outstanding) and one greedy connection (10,000 outstanding) publish 100-byte messages to
stream ``FLOOD`` for the flood's seconds, in a session of their own
(:mod:`benchmarks.client_flood_group`); the probe starts 1 s after every flooder process
has connected all its connections (each marks itself ready in ``root/flood-ready``),
however long they took to start. Both streams have 3 replicas, each its own Raft group
with its own leader, so the probe's publishes are not ordered behind the flood's.
For the probe sharing the flood's Raft group (as every lazily-queue queue shares one
log), the second half of the probe's time under the flood publishes to ``FLOOD``
instead (``shared``). With a rate, the flood's connections publish on a schedule
(:mod:`benchmarks.flood_pacing`) as lazily-queue's flood clients push. Each flooder
prints how many publishes were acknowledged, how many failed and how many were behind
schedule; the leaders of both streams are read before and after the flood.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import peers_nats
from benchmarks.client_flood_group import (
    MARK_READY,
    flood_outputs,
    flood_ready,
    release_flood,
    run_queue_wait,
    start_flood,
    stop_flood,
    wait_per_wake,
)
from benchmarks.flood_pacing import client_rate
from benchmarks.peers_common import PAYLOAD, cpu_seconds, flood_cpu, node_env, percentiles

FLOODER = MARK_READY + r'''
import asyncio, json, sys, time
import nats
from benchmarks.flood_pacing import flood
async def client(urls, until, inflight, counts, rate):
    seconds = float(sys.argv[2])
    nc = await nats.connect(servers=urls, connect_timeout=10)
    js = nc.jetstream(timeout=120)
    linked(int(sys.argv[3]))
    async def push():
        try:
            await js.publish("FLOOD", b"x" * 100)
        except Exception:
            counts[1] += 1
            await asyncio.sleep(0.01)
        else:
            counts[0] += 1
    try:
        if rate is not None:  # every schedule spans the probe's time: from the flood on
            await flood_on()
            until = time.monotonic() + seconds
        behind = await flood(push, inflight, until, rate)
        counts[2], counts[3] = counts[2] + behind.total, counts[3] + behind.late
    finally:
        await nc.close()
async def main():
    urls = sys.argv[1].split(",")
    seconds, clients, inflight = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rate = json.loads(sys.argv[5])
    counts = [0, 0, 0, 0]
    until = time.monotonic() + seconds
    cpu = time.process_time()
    await asyncio.gather(*(client(urls, until, inflight, counts, rate) for _ in range(clients)))
    print(*counts, time.process_time() - cpu, flush=True)
asyncio.run(main())
'''

#: Streams: the probe's and the flood's (the subject is the stream's name).
PROBE, FLOOD = "PROBE", "FLOOD"


async def _probe(js: Any, seconds: float, subject: str = PROBE) -> list[float]:
    samples: list[float] = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.perf_counter()
        await js.publish(subject, PAYLOAD)
        samples.append(time.perf_counter() - started)
    return samples


async def _leaders(js: Any) -> dict[str, str | None]:
    """Each stream's leader (server name), ``None`` when the cluster has none for it."""
    out: dict[str, str | None] = {}
    for name in (PROBE, FLOOD):
        info = await js.stream_info(name)
        out[name] = None if info.cluster is None else info.cluster.leader
    return out


def _flooder(urls: list[str], seconds: float, clients: int, in_flight: int,
             rate: float | None) -> list[str]:
    return [sys.executable, "-c", FLOODER, ",".join(urls), str(seconds), str(clients),
            str(in_flight), json.dumps(rate)]


async def run(root: Path, flooders: int, seconds: float, clients: int = 4,
              in_flight: int = 512, greedy: int = 10_000, rate: float | None = None
              ) -> dict[str, Any]:
    """The probe alone for ``min(seconds, 5)`` s, then under the flood (offering
    ``rate`` publishes per second in all, split evenly over its connections, open loop:
    :mod:`benchmarks.flood_pacing`; as fast as they can without); the figures under
    :mod:`benchmarks.client_flood`'s keys."""
    from nats.js.api import RetentionPolicy

    each = client_rate(rate, flooders * clients + 1)

    flood: asyncio.subprocess.Process | None = None
    async with peers_nats.cluster(root) as cluster:
        nc = await peers_nats.connect_ready(cluster.urls)
        try:
            js = nc.jetstream(timeout=120)
            for name in (PROBE, FLOOD):
                await peers_nats.stream(js, name, RetentionPolicy.LIMITS)
            await js.publish(PROBE, PAYLOAD)  # the link warm
            baseline = await _probe(js, min(seconds, 5.0))
            before = await _leaders(js)
            pids = [node.proc.pid for node in cluster.nodes if node.proc is not None]
            cpu_before, flood_began = sum(map(cpu_seconds, pids)), time.monotonic()
            argvs = ([_flooder(cluster.urls, seconds, clients, in_flight, each)] * flooders
                     + [_flooder(cluster.urls, seconds, 1, greedy, each)])
            # a session of their own (the repository on their path, for flood_pacing);
            # each marks itself ready in root/"flood-ready"
            flood = await start_flood(argvs, node_env(), ready=root / "flood-ready")
            await flood_ready(flood, root / "flood-ready", len(argvs))
            release_flood(root / "flood-ready")
            await asyncio.sleep(1.0)  # the flood is on
            half = max(1.0, seconds - 2.0) / 2
            waited = run_queue_wait()
            during = await _probe(js, half)
            cpu_wait = wait_per_wake(waited, run_queue_wait())
            shared = await _probe(js, half, FLOOD)
            acked = failed = behind = late = 0
            clients_cpu = 0.0
            for text in await flood_outputs(flood):
                ok, errors, off, off_late, used = text.split()
                acked, failed, behind = acked + int(ok), failed + int(errors), behind + int(off)
                late += int(off_late)
                clients_cpu += float(used)
            cpu_figures = flood_cpu(pids, cpu_before, time.monotonic() - flood_began,
                                    acked, clients_cpu)
            after = await _leaders(js)
        finally:
            await stop_flood(flood)
            await nc.close()
    base50, base99 = percentiles(baseline)
    flood50, flood99 = percentiles(during)
    shared50, shared99 = percentiles(shared)
    return {
        "leader_before": before, "leader_after": after,
        "leader_kept": None not in before.values() and before == after,
        "baseline_p50_ms": base50, "baseline_p99_ms": base99, "baseline_samples": len(baseline),
        "flood_p50_ms": flood50, "flood_p99_ms": flood99, "flood_samples": len(during),
        "flood_p50_ratio": round(flood50 / base50, 1) if base50 else None,
        "flood_pushes_per_s": round(acked / seconds), "flood_failed": failed,
        "flood_rate": rate, "flood_behind": behind, "flood_behind_late": late,
        "probe_cpu_wait_ms": cpu_wait,
        **cpu_figures,
        "shared": {"flood_p50_ms": shared50, "flood_p99_ms": shared99,
                   "flood_samples": len(shared),
                   "flood_p50_ratio": round(shared50 / base50, 1) if base50 else None},
        "sync_always": cluster.sync,
        "notes": [f"NATS JetStream R3 ({peers_nats.server_version()}): 3 clustered servers "
                  f"on loopback, file storage, {peers_nats.durability(cluster.sync)}; the "
                  "probe and the flood publish to two streams, each its own Raft group"],
    }
