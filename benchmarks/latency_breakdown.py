"""Where one push's time goes on a single member (the embedded default), stage by stage.

    python benchmarks/latency_breakdown.py [--samples N] [--monitor] [--dir DIR] [--json]

One ``Node`` in this process, ``durability="fsync"``, 100-byte pushes one at a time.
The driver's steps, fsyncs and releases are timed from the outside (its methods are
wrapped for the run; nothing in the library is instrumented) and each stage's p50 is
printed in microseconds:

- ``to_step``: the caller's ``push`` began -> the driver's step began (proposal,
  encoding, and the loop turn when the step is not taken at once);
- ``to_fsync``: step began -> fsync began (proposals become a log entry, journal write);
- ``fsync``: the fsync itself;
- ``to_completion``: fsync ended -> the push's result handed to its caller (commit,
  apply, reader events);
- ``to_step_end``: completion -> the step ended (what the step does after it);
- ``to_resume``: step ended -> the caller resumed (the loop turn and the way back).

Then the same pushes with ``os.fdatasync`` replaced by a no-op give the software path
alone (p50 and CPU per push). ``--monitor`` adds what a ``lazily-queue node`` process
runs beside it (metrics, history, state log). ``--dir`` chooses where the data goes
(the disk decides the fsync stage). With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lazily_queue.node import Node  # noqa: E402
from lazily_queue.raft.driver import Driver  # noqa: E402

PAYLOAD = b"x" * 100
STAGES = ["to_step", "to_fsync", "fsync", "to_completion", "to_step_end", "to_resume"]


class Marks:
    """First time each point was reached during one push (nanoseconds)."""

    def __init__(self) -> None:
        self.at: dict[str, int] = {}

    def mark(self, name: str) -> None:
        self.at.setdefault(name, time.perf_counter_ns())


def _wrap(driver: Driver, marks: Marks) -> None:
    """Time the driver's steps, its fsync and its completions (this run only)."""
    step, run, results = driver._step, driver.fsync.run, driver._dispatch_results

    def timed_step() -> None:
        marks.mark("step")
        step()
        marks.mark("step_end")

    def timed_run() -> BaseException | None:
        marks.mark("fsync")
        try:
            return run()
        finally:
            marks.mark("fsync_end")

    def timed_results(ready: Any) -> None:
        if ready.completions:
            marks.mark("completion")
        results(ready)

    driver._step = timed_step  # type: ignore[method-assign]
    driver.fsync.run = timed_run  # type: ignore[method-assign]
    driver._dispatch_results = timed_results  # type: ignore[method-assign]


def _stages(at: dict[str, int], start: int, end: int) -> list[float] | None:
    points = ["step", "fsync", "fsync_end", "completion", "step_end"]
    if any(p not in at for p in points):
        return None  # the fsync ran on the worker thread: not this breakdown
    times = [start, *(at[p] for p in points), end]
    return [(b - a) / 1000 for a, b in itertools.pairwise(times)]


async def _node(directory: str, sockets: str, monitor: bool) -> tuple[Node, Any]:
    name = os.path.basename(directory)
    node = Node(1, data_dir=directory, listen=f"unix://{sockets}/{name}.sock",
                secret="latency-breakdown-secret-0123456789")
    await node.start()
    mon = None
    if monitor:
        from lazily_queue.monitor import Monitor

        mon = Monitor(node)
        mon.start()
    return node, mon


async def breakdown(directory: str, sockets: str, samples: int, monitor: bool
                    ) -> dict[str, Any]:
    node, mon = await _node(os.path.join(directory, "disk"), sockets, monitor)
    try:
        queue = node.queue("latency")
        for _ in range(200):
            await queue.push(PAYLOAD)
        marks = Marks()
        _wrap(node.driver, marks)
        rows: list[list[float]] = []
        totals: list[float] = []
        for _ in range(samples):
            marks.at.clear()
            start = time.perf_counter_ns()
            await queue.push(PAYLOAD)
            end = time.perf_counter_ns()
            totals.append((end - start) / 1000)
            row = _stages(marks.at, start, end)
            if row is not None:
                rows.append(row)
    finally:
        if mon is not None:
            await mon.stop()
        await node.stop()
    out: dict[str, Any] = {"p50_us": round(statistics.median(totals), 1),
                           "inline_samples": len(rows)}
    for i, name in enumerate(STAGES):
        out[f"{name}_us"] = round(statistics.median(r[i] for r in rows), 1) if rows else None
    return out


async def software(directory: str, sockets: str, samples: int, monitor: bool
                   ) -> dict[str, Any]:
    """The same pushes with fdatasync a no-op: the code path without the disk."""
    real = os.fdatasync
    os.fdatasync = lambda fd: None
    try:
        node, mon = await _node(os.path.join(directory, "software"), sockets, monitor)
        try:
            queue = node.queue("latency")
            for _ in range(200):
                await queue.push(PAYLOAD)
            totals: list[float] = []
            cpu = time.process_time()
            for _ in range(samples):
                start = time.perf_counter_ns()
                await queue.push(PAYLOAD)
                totals.append((time.perf_counter_ns() - start) / 1000)
            cpu = time.process_time() - cpu
        finally:
            if mon is not None:
                await mon.stop()
            await node.stop()
    finally:
        os.fdatasync = real
    return {"software_p50_us": round(statistics.median(totals), 1),
            "software_cpu_us_per_push": round(cpu / samples * 1e6, 1)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    # the sockets in the system's temporary directory: under a deep --dir their paths
    # would pass the 107-byte limit of a Unix socket path
    with (tempfile.TemporaryDirectory(prefix="lazily-latency-", dir=args.dir) as directory,
          tempfile.TemporaryDirectory(prefix="lazily-latency-") as sockets):
        figures = await breakdown(directory, sockets, args.samples, args.monitor)
        figures.update(await software(directory, sockets, args.samples, args.monitor))
    figures.update(samples=args.samples, monitor=args.monitor)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="pushes (default 2,000)")
    parser.add_argument("--monitor", action="store_true",
                        help="run the node process's monitor beside it")
    parser.add_argument("--dir", help="where the data directory goes (default: $TMPDIR)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    figures = asyncio.run(main_async(args))
    print(f"one member, {args.samples:,} pushes of 100 B one at a time"
          f"{' (with the monitor)' if args.monitor else ''}: p50 {figures['p50_us']} us; "
          f"{figures['inline_samples']:,} with the fsync on the loop's thread")
    for name in STAGES:
        print(f"  {name:14s} {figures[f'{name}_us']} us")
    print(f"software path alone (no fdatasync): p50 {figures['software_p50_us']} us, "
          f"{figures['software_cpu_us_per_push']} us CPU per push")
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
