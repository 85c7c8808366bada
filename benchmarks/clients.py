"""Clients over a socket: lazily-queue through a client against NATS JetStream R3 with its
own client, in one run.

    python benchmarks/clients.py [--count N] [--rounds R] [--json]
    lazily-queue bench clients ...

lazily-queue: three ``lazily-queue node`` processes (Raft over Unix sockets,
``durability = "fsync"``) serving clients on a Unix socket and on TCP; this process is
a client (``lazily_queue.connect``, given the three addresses; it links to the leader)
over each transport in turn. NATS
JetStream R3: three clustered ``nats-server -js`` (file storage, ``sync_interval:
always`` when the server has it), nats-py in this process. Both are the fair
comparison: a client over a socket, every acknowledged message on a majority.

Workloads, 100-byte messages, N per phase: produce with 256 pushes in flight; end to
end with one consumer (batches of 100) while 256 push. Each phase also reports the CPU
(user + system) every process spent per message: this one (the client) and each member
or server. ``--rounds R`` runs lazily-queue and NATS R times, taking turns, and reports
each figure's median and each ratio's median over the rounds (the machine's load moves a
single run's figures). With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peers_common import (  # noqa: E402
    BATCH,
    PAYLOAD,
    cpu_seconds,
    fdatasync_p50_ms,
    free_port,
    markdown_table,
    median_systems,
    node_env,
    rate,
    reap,
    spread,
    start_nodes,
)

SECRET_ENV, TOKEN_ENV = "LAZILY_CLIENTS_BENCH_SECRET", "LAZILY_CLIENTS_BENCH_TOKEN"
ROWS = {"produce_per_s": "produce, 256 in flight (/s)",
        "end_to_end_per_s": "end to end, 1 consumer, 256 pushing (/s)"}


def _config(root: Path, node: int, tcp_port: int) -> Path:
    peers = "\n".join(f'{i} = "unix://{root}/n{i}.sock"' for i in (1, 2, 3))
    text = "\n".join([
        f"id = {node}", 'cluster = "clients-bench"', f'data_dir = "{root}/d{node}"',
        f'listen = "unix://{root}/n{node}.sock"', 'durability = "fsync"',
        f'secret_env = "{SECRET_ENV}"', "startup_timeout = 60",
        f'clients = ["unix://{root}/c{node}.sock", "tcp://127.0.0.1:{tcp_port}"]', "",
        "[peers]", peers, "",
        "[[client]]", 'name = "bench"', f'token_env = "{TOKEN_ENV}"', 'produce = ["*"]',
        'consume = ["*"]', ""])
    path = root / f"node{node}.toml"
    path.write_text(text)
    return path


def _cpu_per_op(pids: dict[str, int | None], before: dict[str, float], count: int
                ) -> dict[str, float]:
    """CPU microseconds per op of each process since ``before``."""
    return {who: round((cpu_seconds(pid) - before[who]) / count * 1e6, 1)
            for who, pid in pids.items()}


async def _phases(client: Any, tag: str, count: int, pids: dict[str, int | None]
                  ) -> dict[str, Any]:
    await client.barrier(timeout=60)
    produce = client.queue(f"produce-{tag}")
    await produce.push(PAYLOAD)  # declared, and the link warm
    cpu = {who: cpu_seconds(pid) for who, pid in pids.items()}
    started = time.perf_counter()
    await spread(count, lambda: produce.push(PAYLOAD))
    figures: dict[str, Any] = {"produce_per_s": rate(count, time.perf_counter() - started),
                               "produce_cpu_us": _cpu_per_op(pids, cpu, count)}
    e2e = client.queue(f"e2e-{tag}")
    await e2e.push(b"warm-up")
    assert await e2e.pop() == b"warm-up"

    async def consume() -> None:
        got = 0
        async for _ in e2e.items(prefetch=BATCH):
            got += 1
            if got == count:
                return

    consumer = asyncio.create_task(consume())
    cpu = {who: cpu_seconds(pid) for who, pid in pids.items()}
    started = time.perf_counter()
    await spread(count, lambda: e2e.push(PAYLOAD))
    await consumer
    figures["end_to_end_per_s"] = rate(count, time.perf_counter() - started)
    figures["end_to_end_cpu_us"] = _cpu_per_op(pids, cpu, count)
    return figures


async def run_lazily(root: Path, count: int) -> dict[str, dict[str, Any]]:
    from lazily_queue import Credentials, connect
    from lazily_queue.demo.processes import NodeProcess

    root.mkdir(parents=True)  # noqa: ASYNC240 - set-up
    token = secrets.token_hex(16)
    env = node_env(**{SECRET_ENV: secrets.token_hex(16), TOKEN_ENV: token})
    ports = {i: free_port() for i in (1, 2, 3)}
    procs = [NodeProcess(i, _config(root, i, ports[i]), cwd=ROOT, env=env,
                         log_path=root / f"node{i}.log") for i in (1, 2, 3)]
    results: dict[str, dict[str, Any]] = {}
    try:
        await start_nodes(procs)
        for tag, addresses in (("unix", [f"unix://{root}/c{i}.sock" for i in (1, 2, 3)]),
                               ("tcp", [f"tcp://127.0.0.1:{ports[i]}" for i in (1, 2, 3)])):
            async with connect(addresses, Credentials("bench", token.encode()),
                               connect_timeout=30, op_timeout=60) as client:
                pids: dict[str, int | None] = {"client": None}
                pids.update({f"n{p.node_id}": p.pid for p in procs})
                figures = await _phases(client, tag, count, pids)
                figures["member"] = client.member
            results[tag] = figures
            print(f"lazily-queue client over {tag}: {figures}", flush=True)
    finally:
        for proc in procs:
            await proc.stop()
    return results


async def run_nats(root: Path, count: int) -> dict[str, Any]:
    from benchmarks import peers_nats

    async with peers_nats.cluster(root) as cluster:
        figures: dict[str, Any] = {"sync_always": cluster.sync}
        nc = await peers_nats.connect_ready(cluster.urls)
        try:
            js = nc.jetstream(timeout=30)
            pids: dict[str, int | None] = {"client": None}
            pids.update({f"n{i + 1}": None if n.proc is None else n.proc.pid
                         for i, n in enumerate(cluster.nodes)})
            for phase, run in (("produce", peers_nats.produce),
                               ("end_to_end", peers_nats.end_to_end)):
                cpu = {who: cpu_seconds(pid) for who, pid in pids.items()}
                figures.update(await run(js, count))
                figures[f"{phase}_cpu_us"] = _cpu_per_op(pids, cpu, count)
        finally:
            await nc.close()
    print(f"NATS JetStream R3: {figures}", flush=True)
    return figures


async def _round(root: Path, count: int) -> dict[str, Any]:
    """One round: lazily-queue through a client over each transport, then NATS."""
    out: dict[str, Any] = {"lazily": await run_lazily(root / "lazily", count)}
    if shutil.which("nats-server") is None:
        out["nats"] = {"error": "nats-server not found: apt install nats-server"}
    else:
        try:
            out["nats"] = await run_nats(root / "nats", count)
        except ImportError:
            out["nats"] = {"error": "nats-py missing: pip install -e '.[bench]' in the "
                                    "lazily-queue clone"}
    return out


def over_rounds(rounds: list[dict[str, Any]]
                ) -> tuple[dict[str, dict[str, Any]], dict[str, Any], dict[str, dict[str, float]]]:
    """lazily-queue's figures per transport and NATS's, each its median over the rounds
    (the CPU per op too), and each ratio the median of the ratios within each round."""
    systems = median_systems([{**one["lazily"], "nats": one["nats"]} for one in rounds])
    each = [ratios(one["lazily"], one["nats"]) for one in rounds]
    medians: dict[str, dict[str, float]] = {}
    for tag in ("unix", "tcp"):
        for key in ROWS:
            values = [r[tag][key] for r in each if key in r.get(tag, {})]
            if values:
                medians.setdefault(tag, {})[key] = round(statistics.median(values), 3)
    lazily = {tag: systems[tag][0] for tag in ("unix", "tcp")}
    return lazily, systems["nats"][0], medians


async def main_async(count: int, rounds: int = 1) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="lazily-clients-"))
    out: dict[str, Any] = {"count": count, "rounds": rounds}
    each: list[dict[str, Any]] = []
    try:
        out["fdatasync_ms"] = fdatasync_p50_ms(root)
        for number in range(1, rounds + 1):
            if rounds > 1:
                print(f"-- round {number} of {rounds}", flush=True)
            each.append(await _round(root / f"round{number}", count))
    finally:
        reap()
        shutil.rmtree(root, ignore_errors=True)
    out["lazily"], out["nats"], medians = over_rounds(each)
    if rounds > 1:
        out["each_round"] = each
    nats_figures = out["nats"]
    print(f"\n{count:,} messages of 100 B per phase; disk fdatasync p50 "
          f"{out['fdatasync_ms']} ms")
    print(table(out["lazily"], nats_figures, medians))
    if rounds > 1:
        print(f"{rounds} rounds, lazily-queue and NATS taking turns: each figure is its "
              "median over the rounds, each ratio the median of the ratios within each round")
    if "error" in nats_figures:
        print(f"NATS JetStream R3 skipped: {nats_figures['error']}")
    elif not nats_figures.get("sync_always"):
        print("note: this nats-server acknowledges before fsync (no `sync_interval: always`)")
    print("both: a client over a socket in this process, 3 members/servers on this host, "
          "acknowledged = on a majority; lazily-queue fsyncs before acknowledging")
    out["ratios"] = medians
    return out


def ratios(lazily: dict[str, dict[str, Any]], nats_figures: dict[str, Any]
           ) -> dict[str, dict[str, float]]:
    """lazily-queue's ratios to NATS per transport (none where NATS has no figure)."""
    out: dict[str, dict[str, float]] = {}
    for key in ROWS:
        theirs = nats_figures.get(key)
        if not theirs:
            continue
        for tag in ("unix", "tcp"):
            out.setdefault(tag, {})[key] = round(lazily[tag][key] / theirs, 3)
    return out


def table(lazily: dict[str, dict[str, Any]], nats_figures: dict[str, Any],
          shown: dict[str, dict[str, float]] | None = None) -> str:
    """The figures as a Markdown table with the ratios ``shown`` (by default this run's
    :func:`ratios`; over rounds, their medians)."""
    shown = ratios(lazily, nats_figures) if shown is None else shown
    lines = [["figure", "client, unix", "client, tcp", "NATS R3", "unix/NATS", "tcp/NATS"]]
    for key, label in ROWS.items():
        cells = [lazily[t][key] for t in ("unix", "tcp")]
        cell = [f"{shown[t][key]:.2f}x" if key in shown.get(t, {}) else "—"
                for t in ("unix", "tcp")]
        lines.append([label, f"{cells[0]:,}", f"{cells[1]:,}",
                      f"{nats_figures.get(key) or 0:,}", *cell])
    return markdown_table(lines, right=range(1, 6))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="messages per phase")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run lazily-queue and NATS this many times, taking turns, and "
                             "report medians")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if args.count < 1 or args.rounds < 1:
        parser.error("--count and --rounds must be at least 1")
    try:
        result = asyncio.run(main_async(args.count, args.rounds))
    finally:
        reap()
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
