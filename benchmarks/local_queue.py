"""Local QueueCell throughput against ``asyncio.Queue`` in the same run.

Measures push+pop pairs (blocks of 64 pushes then 64 pops) on:

- an unobserved, unbounded QueueCell vs ``asyncio.Queue.put_nowait/get_nowait``
  (the headline ratio; target: QueueCell costs at most 1.0x asyncio.Queue);
- the same, bounded (capacity 1024 vs ``asyncio.Queue(maxsize=1024)``);
- an observed QueueCell (one effect watching ``len``, rerun on every op).

Each figure is the median of several repetitions (the best is reported too). With
``--json`` the last line printed is one JSON object holding every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from lazily_queue import QueueCell
from lazily_queue.reactive import Context, Effect

BLOCK = 64
TARGET = 1.0
"""The unobserved, unbounded QueueCell costs at most this many times asyncio.Queue."""


def _pairs(push: Callable[[Any], Any], pop: Callable[[], Any], pairs: int) -> int:
    """Run ``pairs`` push+pop pairs; returns elapsed nanoseconds."""
    blocks = range(pairs // BLOCK)
    block = range(BLOCK)
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in blocks:
            for i in block:
                push(i)
            for _ in block:
                pop()
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


Candidate = tuple[Callable[[Any], Any], Callable[[], Any], Any]


def _cell(capacity: int | None, observed: bool) -> Candidate:
    cell: QueueCell[int] = QueueCell(capacity=capacity, context=Context(name="bench"))
    keep: Any = None
    if observed:
        length = cell.len

        def watch() -> None:
            length.get()

        keep = Effect(watch, context=cell.ctx, name="bench.len")
    return cell.try_push, cell.try_pop, keep


def _asyncio_queue(maxsize: int) -> Candidate:
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize)
    return queue.put_nowait, queue.get_nowait, queue


def _measure(make: Callable[[], Candidate], pairs: int, repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        push, pop, keep = make()
        elapsed = _pairs(push, pop, pairs)
        samples.append(elapsed / pairs)
        del keep
    median = statistics.median(samples)
    return {
        "ns_per_pair_median": round(median, 1),
        "ns_per_pair_best": round(min(samples), 1),
        "pairs_per_second": round(1e9 / median),
    }


async def run(pairs: int, repeat: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    # Interleave the candidates so drift (turbo, noisy neighbours) hits both alike.
    for _ in range(2):
        figures["asyncio_queue"] = _measure(lambda: _asyncio_queue(0), pairs, repeat)
        figures["queuecell"] = _measure(lambda: _cell(None, False), pairs, repeat)
    figures["asyncio_queue_bounded"] = _measure(lambda: _asyncio_queue(1024), pairs, repeat)
    figures["queuecell_bounded"] = _measure(lambda: _cell(1024, False), pairs, repeat)
    figures["queuecell_observed"] = _measure(lambda: _cell(None, True), pairs, repeat)
    base = figures["asyncio_queue"]["ns_per_pair_median"]
    bounded_base = figures["asyncio_queue_bounded"]["ns_per_pair_median"]
    figures["ratio"] = round(figures["queuecell"]["ns_per_pair_median"] / base, 3)
    figures["ratio_bounded"] = round(
        figures["queuecell_bounded"]["ns_per_pair_median"] / bounded_base, 3
    )
    figures["ratio_observed"] = round(
        figures["queuecell_observed"]["ns_per_pair_median"] / base, 3
    )
    figures["target_ratio"] = TARGET
    figures["meets_target"] = figures["ratio"] <= TARGET
    figures["pairs"] = pairs
    figures["repeat"] = repeat
    figures["python"] = platform.python_version()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200_000, help="push+pop pairs per sample")
    parser.add_argument("--repeat", type=int, default=5, help="samples per figure (median)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    pairs = max(BLOCK, args.pairs - args.pairs % BLOCK)
    figures = asyncio.run(run(pairs, args.repeat))
    rows = [
        ("asyncio.Queue put_nowait/get_nowait", "asyncio_queue"),
        ("QueueCell try_push/try_pop (unobserved)", "queuecell"),
        ("asyncio.Queue(maxsize=1024)", "asyncio_queue_bounded"),
        ("QueueCell(capacity=1024) (unobserved)", "queuecell_bounded"),
        ("QueueCell observed (effect on len)", "queuecell_observed"),
    ]
    print(
        f"push+pop pairs: {pairs} per sample, median of {args.repeat} "
        f"(Python {figures['python']})"
    )
    for label, key in rows:
        f = figures[key]
        print(
            f"  {label:<42} {f['pairs_per_second']:>12,} pairs/s  "
            f"{f['ns_per_pair_median']:>7.1f} ns/pair (best {f['ns_per_pair_best']:.1f})"
        )
    verdict = "meets" if figures["meets_target"] else "MISSES"
    print(
        f"ratio QueueCell/asyncio.Queue: {figures['ratio']:.2f}x unbounded, "
        f"{figures['ratio_bounded']:.2f}x bounded, {figures['ratio_observed']:.2f}x observed "
        f"({verdict} the {figures['target_ratio']}x target)"
    )
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
