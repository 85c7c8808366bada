"""Replicated queue benchmark: throughput, latency, failover, and stock PySyncObj.

    python benchmarks/raft_queue.py [--json] [--quick]

Every figure is for 3 nodes with fsync on (acknowledged = committed on a majority and
durable there):

- committed pushes/s and p50/p99 latency with 1 and 256 pushes in flight, for 3 nodes
  in one process, 3 processes over Unix sockets and 3 processes over WebSocket;
- failover: SIGKILL of the leader process to the first commit on the new leader;
- the same push workload on stock PySyncObj 0.3.17 (its own TCP transport and
  threads, default settings, one replicated command per push; it never fsyncs);
- work queue claim+ack with 8 competing workers, and topic fan-out to 4 subscribers.

Targets: at least 5x stock PySyncObj at 256 in flight; failover median <= 700 ms.
With ``--json`` the last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.raft_load import push_load  # noqa: E402
from lazily_queue import testing  # noqa: E402
from lazily_queue.demo.processes import NodeProcess  # noqa: E402
from lazily_queue.raft.engine import EngineConfig  # noqa: E402

SECRET_ENV = "LAZILY_BENCH_SECRET"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- one process ------------------------------------------------------------------------------


def local_cluster(root: Path) -> testing.Cluster:
    """Three nodes in this process with the default Raft timing, fsync on."""
    return testing.cluster(3, data_dir=root, durability="fsync", engine=EngineConfig())


async def in_process(root: Path, count: int) -> dict[str, Any]:
    async with local_cluster(root) as cluster:
        follower = (await cluster.followers())[0]
        return {f"inflight_{k}": await push_load(follower, count if k > 1 else count // 8, k,
                                                 name=f"b{k}") for k in (1, 256)}


async def work_and_topic(root: Path, jobs: int) -> dict[str, Any]:
    async with local_cluster(root) as cluster:
        nodes = list(cluster.nodes.values())
        queues = [n.work_queue("jobs", visibility_timeout=30) for n in nodes]
        await asyncio.gather(*(queues[i % 3].push(i) for i in range(jobs)))
        await nodes[0].barrier()
        done = 0
        finished = asyncio.Event()

        async def worker(w: int) -> None:
            nonlocal done
            async for job in queues[w % 3].deliveries(f"worker-{w}"):
                async with job:
                    done += 1
                if done >= jobs:
                    finished.set()

        started = time.perf_counter()
        tasks = [asyncio.create_task(worker(w)) for w in range(8)]
        await asyncio.wait_for(finished.wait(), 120)
        claim_ack = jobs / (time.perf_counter() - started)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

        topics = [n.topic("news") for n in nodes]
        for s in range(4):
            await topics[s % 3].subscribe(f"sub{s}", "durable")
        received = [0, 0, 0, 0]

        async def subscriber(s: int) -> None:
            async for _ in topics[s % 3].stream(f"sub{s}"):
                received[s] += 1
                if received[s] >= jobs:
                    return

        started = time.perf_counter()
        readers = [asyncio.create_task(subscriber(s)) for s in range(4)]
        publish_started = time.perf_counter()
        await asyncio.gather(*(topics[i % 3].publish(i) for i in range(jobs)))
        publish_rate = jobs / (time.perf_counter() - publish_started)
        await asyncio.wait_for(asyncio.gather(*readers), 180)
        fanout = 4 * jobs / (time.perf_counter() - started)
        return {"claim_ack_per_s_8_workers": round(claim_ack),
                "topic_publish_per_s": round(publish_rate),
                "topic_deliveries_per_s_4_subscribers": round(fanout), "jobs": jobs}


# -- three processes --------------------------------------------------------------------------


class ProcessCluster:
    def __init__(self, root: Path, scheme: str, app: dict[int, dict[str, Any]]) -> None:
        self.root = root
        self.scheme = scheme
        self.app = app
        self.env = dict(os.environ, **{SECRET_ENV: secrets.token_hex(16)})
        self.env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{self.env.get('PYTHONPATH', '')}"
        if scheme == "unix":
            self.addresses = {i: f"unix://{root}/n{i}.sock" for i in (1, 2, 3)}
        else:
            self.addresses = {i: f"ws://127.0.0.1:{free_port()}/raft" for i in (1, 2, 3)}
        self.procs = {i: self.process(i) for i in (1, 2, 3)}

    def process(self, node: int) -> NodeProcess:
        peers = "\n".join(f'{i} = "{a}"' for i, a in self.addresses.items())
        lines = [f"id = {node}", 'cluster = "bench"', f'data_dir = "{self.root}/d{node}"',
                 f'listen = "{self.addresses[node]}"', 'http = "127.0.0.1:0"',
                 f'secret_env = "{SECRET_ENV}"', "", "[peers]", peers]
        if node in self.app:
            lines += ["", "[app]"] + [f"{k} = {json.dumps(v)}" for k, v in self.app[node].items()]
        config = self.root / f"node{node}-{time.monotonic_ns()}.toml"
        config.write_text("\n".join(lines) + "\n")
        return NodeProcess(node, config, cwd=ROOT, env=self.env,
                           log_path=self.root / f"node{node}.log")

    async def start(self) -> None:
        for proc in self.procs.values():
            await proc.start()
        for proc in self.procs.values():
            await proc.wait_ready(60)

    async def stop(self) -> None:
        for proc in self.procs.values():
            await proc.stop()

    async def leader(self, session: Any, among: set[int] | None = None) -> int | None:
        for node, proc in self.procs.items():
            if among is not None and node not in among:
                continue
            await proc.poll(session)
            if proc.status is not None and proc.status.get("state") == "leader":
                return node
        return None


async def processes_push(root: Path, scheme: str, count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for inflight in (1, 256):
        run = root / f"{scheme}-{inflight}"
        run.mkdir(parents=True)
        result = run / "result.json"
        n = count if inflight > 1 else count // 8
        cluster = ProcessCluster(run, scheme, {1: {
            "entry": "benchmarks.raft_load:push", "count": n, "inflight": inflight,
            "result": str(result)}})
        await cluster.start()
        try:
            deadline = time.monotonic() + 300
            while not result.exists() and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.1)
            out[f"inflight_{inflight}"] = json.loads(result.read_text())
        finally:
            await cluster.stop()
    return out


async def failover(root: Path, rounds: int) -> dict[str, Any]:
    import aiohttp

    root.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - set-up
    stop = root / "stop"
    app = {n: {"entry": "benchmarks.raft_load:commits", "log": str(root / f"commits{n}.log"),
               "stop_file": str(stop)} for n in (1, 2, 3)}
    cluster = ProcessCluster(root, "unix", app)
    await cluster.start()
    times: list[float] = []
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(rounds):
                await asyncio.sleep(1.0)
                leader = None
                while leader is None:
                    leader = await cluster.leader(session)
                    await asyncio.sleep(0.02)
                status = cluster.procs[leader].status or {}
                old_term = int(status.get("term", 0))
                killed_at = time.time()
                cluster.procs[leader].kill()
                await cluster.procs[leader].stop()
                first = None
                deadline = time.monotonic() + 10
                while first is None and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                    stamps = [line.split() for n in (1, 2, 3) if n != leader
                              for line in (root / f"commits{n}.log").read_text().splitlines()]
                    later = [float(t) for t, term in stamps
                             if float(t) > killed_at and int(term) > old_term]
                    first = min(later) if later else None
                if first is not None:
                    times.append(first - killed_at)
                cluster.procs[leader] = cluster.process(leader)
                await cluster.procs[leader].start()
                await cluster.procs[leader].wait_ready(60)
    finally:
        stop.touch()
        await cluster.stop()
    return {"rounds": rounds, "samples_ms": [round(t * 1000) for t in times],
            "median_ms": round(statistics.median(times) * 1000) if times else None}


# -- stock PySyncObj ----------------------------------------------------------------------------


def stock(count: int) -> dict[str, Any]:
    """:func:`benchmarks.stock_pysyncobj.stock` in a fresh interpreter: this process
    imported ``lazily_queue``, whose patches keep stock PySyncObj from linking."""
    program = ("import json, sys\n"
               "from benchmarks.stock_pysyncobj import stock\n"
               "print(json.dumps(stock(int(sys.argv[1]))))\n")
    done = subprocess.run([sys.executable, "-c", program, str(count)], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


# -- main ---------------------------------------------------------------------------------------


def _print(title: str, rows: dict[str, Any]) -> None:
    print(title)
    for key, value in rows.items():
        print(f"  {key:>12}: {value}")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    count = 4000 if args.quick else 20000
    root = Path(tempfile.mkdtemp(prefix="lazily-bench-"))
    try:
        results: dict[str, Any] = {}
        results["in_process"] = await in_process(root / "inproc", count)
        _print("3 nodes, one process (fsync on):", results["in_process"])
        for scheme in ("unix", "ws"):
            key = f"processes_{scheme}"
            results[key] = await processes_push(root / key, scheme, count)
            _print(f"3 processes over {scheme} (fsync on):", results[key])
        results["failover"] = await failover(root / "failover", 3 if args.quick else 7)
        _print("failover (SIGKILL leader -> first commit):", results["failover"])
        results["stock_pysyncobj"] = await asyncio.to_thread(stock, count // 4)
        _print("stock PySyncObj 0.3.17 (defaults, no fsync):", results["stock_pysyncobj"])
        results["work_queue_and_topic"] = await work_and_topic(root / "wq", count // 4)
        _print("work queue and topic (3 nodes, one process, fsync on):",
               results["work_queue_and_topic"])
        ours = results["processes_unix"]["inflight_256"]["pushes_per_s"]
        theirs = results["stock_pysyncobj"]["inflight_256"]["pushes_per_s"]
        results["vs_stock_256_inflight"] = round(ours / max(theirs, 1), 1)
        median = results["failover"]["median_ms"]
        results["targets"] = {
            "at_least_5x_stock": results["vs_stock_256_inflight"] >= 5,
            "failover_median_at_most_700ms": median is not None and median <= 700,
        }
        print(f"vs stock at 256 in flight (3 processes, unix): {results['vs_stock_256_inflight']}x")
        print(f"targets: {results['targets']}")
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
