"""How long a full garbage collection takes in node processes holding a large backlog.

3 ``lazily-queue node`` processes (Unix sockets, fsync); the leader pushes ``--backlog``
work items of small dict payloads that nothing consumes (``benchmarks/gc_backlog_app.py``),
then the nodes run ``--hold`` seconds more (snapshots are taken and sent meanwhile).
Each node times every full collection; the report gives per node the count, the
longest and the median, which of them traversed the objects spared from collections
(:func:`lazily_queue.allocator.freeze_survivors`) and when (seconds after the first
full collection of any node), and the term and state at the start and the end (a new
term: the followers elected a leader again, as a long pause makes them do).
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
    node_config,
    node_env,
    read_json,
    reap,
    start_nodes,
)
from lazily_queue.demo.processes import NodeProcess  # noqa: E402

SECRET_ENV = "LAZILY_GC_BENCH_SECRET"
SIZE = 3


def _config(root: Path, node: int, backlog: int) -> Path:
    return node_config(root, node, SIZE, "gc-bench", SECRET_ENV,
                       {"entry": "benchmarks.gc_backlog_app:run", "root": str(root),
                        "backlog": backlog})


_read = read_json


async def _stats(root: Path, timeout: float = 30) -> dict[int, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = {i: _read(root / f"stats-{i}.json") for i in range(1, SIZE + 1)}
        if all(found.values()):
            return {i: doc for i, doc in found.items() if doc is not None}
        if time.monotonic() > deadline:
            raise RuntimeError("the nodes wrote no figures")
        await asyncio.sleep(0.5)


async def measure(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = node_env(**{SECRET_ENV: secrets.token_hex(16)})
    procs = [NodeProcess(i, _config(root, i, args.backlog), cwd=ROOT, env=env,
                         log_path=root / f"node{i}.log") for i in range(1, SIZE + 1)]
    try:
        await start_nodes(procs)
        await asyncio.sleep(2.0)
        start = await _stats(root)
        (root / "go").touch()
        deadline = time.monotonic() + 600 + args.backlog * 0.01
        while (filled := _read(root / "filled.json")) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the backlog was not pushed in time")
            for proc in procs:
                if not proc.alive:
                    raise RuntimeError(f"node {proc.node_id} exited: {proc.log_tail(5)}")
            await asyncio.sleep(1.0)
        if "error" in filled:
            raise RuntimeError(f"pushing the backlog failed: {filled['error']}")
        print(f"pushed {args.backlog:,} in {filled['seconds']:.1f} s; holding {args.hold} s",
              flush=True)
        await asyncio.sleep(args.hold)
        end = await _stats(root)
    finally:
        for proc in procs:
            await proc.stop()
    nodes = {}
    for i in range(1, SIZE + 1):
        full = end[i]["full_ms"]
        nodes[str(i)] = {"full_collections": len(full), "longest_ms": max(full, default=0),
                         "median_ms": statistics.median(full) if full else 0,
                         "term_start": start[i]["term"], "term_end": end[i]["term"],
                         "state_start": start[i]["state"], "state_end": end[i]["state"],
                         "rss_kb": end[i]["rss_kb"], "frozen_start": start[i]["frozen"],
                         "frozen": end[i]["frozen"],
                         "full_ms": full, "full_at": end[i]["full_at"],
                         "roles": end[i]["roles"], "thawed": end[i]["thawed"]}
    return {"backlog": args.backlog, "fill_s": round(filled["seconds"], 1), "nodes": nodes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog", type=int, default=300_000)
    parser.add_argument("--hold", type=float, default=60.0,
                        help="seconds the nodes run once the backlog is pushed")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lazily-gc-"))
    try:
        figures = asyncio.run(measure(root, args))
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc} (logs kept in {root})", file=sys.stderr)
        return 1
    finally:
        reap()
    shutil.rmtree(root, ignore_errors=True)
    first = min((t for f in figures["nodes"].values() for t in f["full_at"]), default=0.0)
    for node, f in figures["nodes"].items():
        thaws = ", ".join(f"{n} at +{f['full_at'][n - 1] - first:.1f} s" for n in f["thawed"])
        print(f"node {node}: {f['full_collections']} full collections, longest "
              f"{f['longest_ms']} ms, median {f['median_ms']} ms (traversing the spared "
              f"objects: collection {thaws or 'none'}); term {f['term_start']} -> "
              f"{f['term_end']} ({f['state_start']} -> {f['state_end']}); "
              f"spared {f['frozen_start']:,} -> {f['frozen']:,}; RSS {f['rss_kb'] / 1024:.0f} MiB")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
