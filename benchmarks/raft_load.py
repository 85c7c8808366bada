"""Load generators that run inside node processes for ``benchmarks/raft_queue.py``.

``push`` pushes ``count`` items with ``inflight`` concurrent pushers and writes a JSON
result (rate and latency percentiles). ``commits`` pushes one at a time until the
stop file appears and logs the wall-clock time and term of every commit, so the
orchestrator can see when the first commit of a new leader happened.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from lazily_queue import LazilyQueueError
from lazily_queue.node import Node


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {"p50_ms": 0.0, "p99_ms": 0.0}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {"p50_ms": round(at(0.50), 3), "p99_ms": round(at(0.99), 3)}


async def push_load(node: Node, count: int, inflight: int, name: str = "bench") -> dict[str, Any]:
    queue = node.queue(name)
    await queue.push("warm-up")
    latencies: list[float] = []
    per_worker = count // inflight

    async def pusher(w: int) -> None:
        for i in range(per_worker):
            start = time.perf_counter()
            await queue.push((w, i))
            latencies.append(time.perf_counter() - start)

    started = time.perf_counter()
    await asyncio.gather(*(pusher(w) for w in range(inflight)))
    elapsed = time.perf_counter() - started
    return {"pushes": len(latencies), "pushes_per_s": round(len(latencies) / elapsed),
            "inflight": inflight, **percentiles(latencies)}


async def push(node: Node, options: dict[str, Any]) -> None:
    result = await push_load(node, int(options["count"]), int(options["inflight"]))
    Path(options["result"]).write_text(json.dumps(result))  # noqa: ASYNC240 - once, at the end


async def commits(node: Node, options: dict[str, Any]) -> None:
    queue = node.queue("failover")
    stop = Path(options["stop_file"])
    with Path(options["log"]).open("a", buffering=1) as out:  # noqa: ASYNC230
        n = 0
        while not stop.exists():  # noqa: ASYNC240
            try:
                await queue.push(n, timeout=2.0)
            except (LazilyQueueError, TimeoutError):
                await asyncio.sleep(0.005)
                continue
            # The term the entry was committed in: its apply happened under it.
            out.write(f"{time.time():.6f} {node.driver.replica.engine.term}\n")
            n += 1
