"""Does memory stay flat? 1,000,000 messages through a 3-member cluster, RSS and disk.

    python benchmarks/memory.py [--count N] [--quick] [--warmup W] [--trace] [--json]
    lazily-queue bench memory ...

Starts 3 ``lazily-queue node`` processes over Unix sockets with ``durability = "fsync"``;
the load runs in an ``[app]`` of the leader (:mod:`benchmarks.memory_app`, which says
the mix). Each node's RSS (``VmRSS``) and data directory size (bytes of its files; the
journal up to its last record, without the up to 1 MiB of zeros preallocated after it) are
sampled when the nodes are up (*fresh*), after a warm-up of ``--warmup`` messages
(default 240,000: the log is compacted by size a few times, every bounded window is
full, the allocator has seen the largest log, and item and delivery ids are past
65,535, where CBOR integers in the snapshot widen from 3 to 5 bytes) and a settle (the
topic GC has dropped what every subscriber read, then every member has taken a snapshot
and its log is short again): the
*start* figures; then ``--count`` messages (default 1,000,000; ``--quick``: 100,000)
are pushed and consumed with a progress line every ``--every`` seconds, and after
another settle come the *end* figures (both settles end with a snapshot, after which
a node hands the allocator's free pages back, see :mod:`lazily_queue.allocator`; the
peak columns show what it holds in between). Printed per node: fresh, start, end and peak,
end/start (the target: at most 1.10 for both) and end/fresh. ``--trace`` runs the nodes
under tracemalloc and prints what grew (internals, object types, allocation sites)
between start and end. With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.memory_app import MIX  # noqa: E402
from benchmarks.memory_probe import compare, dir_bytes, rss_kb  # noqa: E402
from benchmarks.peers_common import (  # noqa: E402
    node_config,
    node_env,
    read_json,
    reap,
    start_nodes,
)
from lazily_queue.demo.processes import NodeProcess  # noqa: E402

SECRET_ENV = "LAZILY_MEMORY_SECRET"
SIZE = 3
#: The target: end figures at most this multiple of the start figures.
TARGET = 1.10
#: A member's log counts as compacted when it holds at most this many entries.
SETTLED_ENTRIES = 64


def _config(root: Path, node: int, app: dict[str, Any]) -> Path:
    return node_config(root, node, SIZE, "memory-bench", SECRET_ENV, app)


_read = read_json


class Run:
    """The node processes of one run and the figures sampled from them."""

    def __init__(self, root: Path, args: argparse.Namespace) -> None:
        self.root = root
        self.args = args
        self.procs: list[NodeProcess] = []
        self.peak = {i: {"rss_kb": 0, "data_bytes": 0} for i in range(1, SIZE + 1)}

    async def start(self) -> None:
        app = {"entry": "benchmarks.memory_app:run", "root": str(self.root),
               "warmup": self.args.warmup, "count": self.args.count,
               "trace": bool(self.args.trace)}
        env = node_env(**{SECRET_ENV: secrets.token_hex(16)})
        self.procs = [NodeProcess(i, _config(self.root, i, app), cwd=ROOT, env=env,
                                  log_path=self.root / f"node{i}.log")
                      for i in range(1, SIZE + 1)]
        await start_nodes(self.procs)

    async def stop(self) -> None:
        for proc in self.procs:
            await proc.stop()

    def sample(self) -> dict[int, dict[str, int]]:
        """Each node's RSS and data directory size now (and the peaks so far)."""
        figures: dict[int, dict[str, int]] = {}
        for proc in self.procs:
            if not proc.alive or proc.pid is None:
                raise RuntimeError(f"node {proc.node_id} exited: {proc.log_tail(5)}")
            rss = rss_kb(proc.pid)
            if rss <= 0:
                raise RuntimeError(f"no VmRSS for node {proc.node_id} (pid {proc.pid})")
            now = {"rss_kb": rss, "data_bytes": dir_bytes(self.root / f"d{proc.node_id}")}
            peak = self.peak[proc.node_id]
            for key, value in now.items():
                peak[key] = max(peak[key], value)
            figures[proc.node_id] = now
        return figures

    def stats(self) -> dict[int, dict[str, Any]]:
        found = {i: _read(self.root / f"stats-{i}.json") for i in range(1, SIZE + 1)}
        return {i: doc for i, doc in found.items() if doc is not None}

    async def wait_phase(self, name: str, timeout: float, every: float,
                         total: int = 0) -> None:
        """Sample until the leader's app reports ``name``; a progress line each ``every`` s."""
        deadline = time.monotonic() + timeout
        started = last_print = time.monotonic()
        last_done = 0
        while True:
            figures = self.sample()
            phase = _read(self.root / "phase.json") or {}
            if "error" in phase:
                raise RuntimeError(f"the benchmark app failed: {phase['error']}")
            if phase.get("phase") == name:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"phase {name!r} not reached within {timeout:.0f}s")
            now = time.monotonic()
            if total and now - last_print >= every:
                done = int((_read(self.root / "progress.json") or {}).get("done", 0))
                rate = (done - last_done) / (now - last_print)
                last_print, last_done = now, done
                self.say(f"  {done:>10,}/{total:,}  {rate:7,.0f}/s  {now - started:6.0f}s  "
                         + _per_node(figures))
            await asyncio.sleep(0.5)

    async def settle(self, timeout: float) -> bool:
        """Wait until every member's topics hold no element all subscribers have read (the
        leader's periodic GC ran), then until each took a snapshot and its log is short:
        the snapshots compared are then taken at the same point of the workload."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sample()
            stats = self.stats()
            if len(stats) == SIZE and all(s.get("topics_collected") for s in stats.values()):
                break
            await asyncio.sleep(0.5)
        before = {i: int(s.get("snapshots", -1)) for i, s in self.stats().items()}
        while time.monotonic() < deadline:
            self.sample()
            stats = self.stats()
            if len(stats) == SIZE and all(
                    int(s["snapshots"]) > before.get(i, -1)
                    and int(s["log_last_index"]) - int(s["log_first_index"]) <= SETTLED_ENTRIES
                    for i, s in stats.items()):
                await asyncio.sleep(1.5)  # the rewritten journal reaches the directory
                return True
            await asyncio.sleep(0.5)
        return False

    async def dumps(self, label: str) -> dict[int, dict[str, Any]]:
        """Ask every node for its dump ``label``; the dumps that came within a minute."""
        (self.root / f"want-{label}").touch()
        deadline = time.monotonic() + 60
        paths = {i: self.root / f"dump-{label}-{i}.json" for i in range(1, SIZE + 1)}
        while time.monotonic() < deadline:
            if all(path.exists() for path in paths.values()):
                break
            await asyncio.sleep(0.2)
        found = {i: _read(path) for i, path in paths.items()}
        return {i: doc for i, doc in found.items() if doc is not None}

    def say(self, line: str) -> None:
        print(line, file=sys.stderr if self.args.json else sys.stdout, flush=True)


def _per_node(figures: dict[int, dict[str, int]]) -> str:
    rss = " ".join(f"{f['rss_kb'] / 1024:6.1f}" for f in figures.values())
    data = " ".join(f"{f['data_bytes'] / 1e6:6.2f}" for f in figures.values())
    return f"rss MiB {rss}   data MB {data}"


async def measure(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    run = Run(root, args)
    settle = args.settle
    try:
        await run.start()
        fresh = run.sample()
        run.say(f"3 nodes up: {_per_node(fresh)}; warm-up of {args.warmup:,} messages")
        await run.wait_phase("warmed", 600 + args.warmup * 0.05, args.every)
        warm_peak = {i: dict(f) for i, f in run.peak.items()}
        settled_start = await run.settle(settle)
        start = run.sample()
        stats_start = run.stats()
        if args.trace:
            await run.dumps("start")
        run.say(f"start{'' if settled_start else ' (not settled)'}: {_per_node(start)}")
        run.peak = {i: dict(f) for i, f in start.items()}
        began = time.monotonic()
        (root / "go").touch()
        await run.wait_phase("done", 600 + args.count * 0.1, args.every, args.count)
        elapsed = time.monotonic() - began
        settled_end = await run.settle(settle)
        end = run.sample()
        stats_end = run.stats()
        if args.trace:
            await run.dumps("end")
        run.say(f"end{'' if settled_end else ' (not settled)'}: {_per_node(end)}")
        trimmed = await run.dumps("trim")  # after the end figures: it changes RSS
    finally:
        await run.stop()
    leader = (_read(root / "phase.json") or {}).get("leader", True)
    nodes: dict[str, Any] = {}
    for i in range(1, SIZE + 1):
        f, s, e, p = fresh[i], start[i], end[i], run.peak[i]
        nodes[str(i)] = {
            **{f"{k}_{w}": v for w, d in (("fresh", f), ("start", s), ("end", e), ("peak", p))
               for k, v in d.items()},
            "rss_ratio": round(e["rss_kb"] / s["rss_kb"], 3),
            "data_ratio": round(e["data_bytes"] / max(1, s["data_bytes"]), 3),
            "rss_ratio_fresh": round(e["rss_kb"] / f["rss_kb"], 3),
            "rss_kb_warmup_peak": warm_peak[i]["rss_kb"],
            # A collection and malloc_trim(0) after the end figures: what is left is live
            # memory; the difference was free memory the allocator kept (0: no glibc).
            "rss_kb_trimmed": int(trimmed.get(i, {}).get("trimmed_kb", 0)),
            "internals_start": stats_start.get(i, {}).get("internals", {}),
            "internals_end": stats_end.get(i, {}).get("internals", {}),
        }
    return {
        "count": args.count, "warmup": args.warmup, "mix": MIX, "elapsed_s": round(elapsed, 1),
        "per_s": round(args.count / elapsed) if elapsed else 0,
        "settled": settled_start and settled_end, "leader_kept": leader,
        "nodes": nodes,
        "max_rss_ratio": max(n["rss_ratio"] for n in nodes.values()),
        "max_data_ratio": max(n["data_ratio"] for n in nodes.values()),
        "target_ratio": TARGET,
        "met": max(max(n["rss_ratio"], n["data_ratio"]) for n in nodes.values()) <= TARGET,
    }


def report(figures: dict[str, Any], root: Path, args: argparse.Namespace) -> list[str]:
    lines = [f"{figures['count']:,} messages in {figures['elapsed_s']:.0f}s "
             f"({figures['per_s']:,}/s) after a warm-up of {figures['warmup']:,}; "
             f"mix: {figures['mix']}", ""]
    nodes = figures["nodes"]
    lines.append(f"{'RSS MiB':<12} {'fresh':>8} {'warm-up':>8} {'start':>8} {'end':>8} "
                 f"{'peak':>8} {'end/start':>9} {'end/fresh':>9} {'trimmed':>8}")
    lines.append(f"{'':<12} {'':>8} {'peak':>8}")
    for i, n in nodes.items():
        cells = " ".join(f"{n[f'rss_kb_{w}'] / 1024:8.1f}"
                         for w in ("fresh", "warmup_peak", "start", "end", "peak"))
        trimmed = f"{n['rss_kb_trimmed'] / 1024:8.1f}" if n["rss_kb_trimmed"] else "     n/a"
        lines.append(f"node {i:<7} {cells} {n['rss_ratio']:9.3f} {n['rss_ratio_fresh']:9.3f} "
                     f"{trimmed}")
    lines += ["", f"{'data dir MB':<12} {'fresh':>8} {'start':>8} {'end':>8} {'peak':>8} "
                  f"{'end/start':>9}"]
    for i, n in nodes.items():
        cells = " ".join(f"{n[f'data_bytes_{w}'] / 1e6:8.3f}"
                         for w in ("fresh", "start", "end", "peak"))
        lines.append(f"node {i:<7} {cells} {n['data_ratio']:9.3f}")
    lines += ["", "trimmed: RSS after the end figures, a garbage collection and malloc_trim(0) "
                  "(live memory; the rest is free memory the allocator kept)", ""]
    lines.append(f"target end/start <= {TARGET:.2f}: {'met' if figures['met'] else 'NOT met'} "
                 f"(RSS {figures['max_rss_ratio']:.3f}, data {figures['max_data_ratio']:.3f})")
    if not figures["settled"]:
        lines.append("note: a member had not compacted its log when measured")
    if not figures["leader_kept"]:
        lines.append("note: leadership moved during the run")
    if args.trace:
        for i in figures["nodes"]:
            lines += ["", *compare(root, i, "start", "end")]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 messages")
    parser.add_argument("--warmup", type=int, default=240_000)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between progress")
    parser.add_argument("--settle", type=float, default=180.0,
                        help="most seconds to wait for snapshots and compaction")
    parser.add_argument("--trace", action="store_true", help="tracemalloc in the nodes")
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    args = parser.parse_args()
    if args.quick:
        args.count = 100_000
    if args.count < 3 or args.warmup < 3:
        parser.error("--count and --warmup must be at least 3")
    root = args.keep or Path(tempfile.mkdtemp(prefix="lazily-memory-"))
    if args.keep is not None:
        if root.exists() and any(root.iterdir()):
            parser.error(f"--keep {root} must be a new or empty directory")
        root.mkdir(parents=True, exist_ok=True)
    keep = args.keep is not None
    try:
        figures = asyncio.run(measure(root, args))
        for line in report(figures, root, args):
            print(line)
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc} (logs kept in {root})", file=sys.stderr)
        keep = True
        return 1
    finally:
        reap()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
