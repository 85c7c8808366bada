"""The lazily-queue side of ``benchmarks/peers.py``: an ``[app]`` entry run inside nodes.

Every node of the cluster runs :func:`run`; the first that is leader after a barrier
creates the ``claim`` file and runs the phases, the others then return and keep serving
as replicas. The figures are written to ``result`` as one JSON object (or
``{"error": ...}``), through a rename so a reader never sees half a file. Only the public
cell API is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks.peers_common import PAYLOAD, percentiles, rate, serial_latency, spread
from lazily_queue import LazilyQueueError
from lazily_queue.node import Node

Phase = dict[str, Any]


async def produce(node: Node, count: int, samples: int) -> Phase:
    queue = node.queue("produce")
    started = time.perf_counter()
    await spread(count, lambda: queue.push(PAYLOAD))
    return {"produce_per_s": rate(count, time.perf_counter() - started)}


async def end_to_end(node: Node, count: int, samples: int) -> Phase:
    queue = node.queue("end-to-end")

    async def consume() -> None:
        got = 0
        async for _ in queue:
            got += 1
            if got == count:
                return

    consumer = asyncio.create_task(consume())
    started = time.perf_counter()
    await spread(count, lambda: queue.push(PAYLOAD))
    await consumer
    return {"end_to_end_per_s": rate(count, time.perf_counter() - started)}


async def work_queue(node: Node, count: int, samples: int) -> Phase:
    jobs = node.work_queue("jobs")
    done = 0
    finished = asyncio.Event()

    async def worker(w: int) -> None:
        nonlocal done
        async for job in jobs.deliveries(f"worker-{w}"):
            async with job:
                pass
            done += 1
            if done >= count:
                finished.set()

    workers = [asyncio.create_task(worker(w)) for w in range(8)]
    try:
        started = time.perf_counter()
        await spread(count, lambda: jobs.push(PAYLOAD))
        await finished.wait()
        return {"work_queue_per_s": rate(count, time.perf_counter() - started)}
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def fanout(node: Node, count: int, samples: int) -> Phase:
    topic = node.topic("fan-out")
    names = [f"subscriber-{s}" for s in range(4)]
    for name in names:
        await topic.subscribe(name, "durable")

    async def subscriber(name: str) -> None:
        got = 0
        async for _ in topic.stream(name):
            got += 1
            if got == count:
                return

    readers = [asyncio.create_task(subscriber(name)) for name in names]
    try:
        started = time.perf_counter()
        await spread(count, lambda: topic.publish(PAYLOAD))
        await asyncio.gather(*readers)
        return {"fanout_per_s": rate(4 * count, time.perf_counter() - started)}
    finally:
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


async def latency(node: Node, count: int, samples: int, suffix: str) -> Phase:
    queue = node.queue(f"latency-{suffix}")
    figures = await serial_latency(samples, lambda: queue.push(PAYLOAD))
    return {f"p50_ms_{suffix}": figures["p50_ms"], f"p99_ms_{suffix}": figures["p99_ms"]}


async def latency_3(node: Node, count: int, samples: int) -> Phase:
    return await latency(node, count, samples, "3")


async def latency_1(node: Node, count: int, samples: int) -> Phase:
    return await latency(node, count, samples, "1")


async def serial_pop(node: Node, count: int, samples: int) -> Phase:
    queue = node.queue("serial-pop")
    await spread(samples, lambda: queue.push(PAYLOAD))
    got = 0
    waits: list[float] = []
    started = mark = time.perf_counter()
    async for _ in queue:
        now = time.perf_counter()
        waits.append(now - mark)
        mark = now
        got += 1
        if got == samples:
            break
    p50, _ = percentiles(waits)
    return {"serial_pop_per_s_1": rate(samples, time.perf_counter() - started),
            "serial_pop_p50_ms_1": p50}


async def pop_each(node: Node, count: int, samples: int) -> Phase:
    queue = node.queue("pop-each")
    await spread(samples, lambda: queue.push(PAYLOAD))
    started = time.perf_counter()
    for _ in range(samples):
        await queue.pop()
    return {"pop_each_per_s_1": rate(samples, time.perf_counter() - started)}


async def serial_claim_ack(node: Node, count: int, samples: int) -> Phase:
    jobs = node.work_queue("serial-jobs")
    await spread(samples, lambda: jobs.push(PAYLOAD))
    got = 0
    started = time.perf_counter()
    async for job in jobs.deliveries("worker"):
        async with job:
            pass
        got += 1
        if got == samples:
            break
    return {"serial_claim_ack_per_s_1": rate(samples, time.perf_counter() - started)}


PHASES = {
    "produce": produce,
    "end_to_end": end_to_end,
    "work_queue": work_queue,
    "fanout": fanout,
    "latency_3": latency_3,
    "latency_1": latency_1,
    "serial_pop": serial_pop,
    "pop_each": pop_each,
    "serial_claim_ack": serial_claim_ack,
}


def _claim(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


async def run(node: Node, options: dict[str, Any]) -> None:
    """Run ``options["phases"]`` on the leader; write the figures to ``options["result"]``."""
    result, claim = Path(options["result"]), Path(options["claim"])
    while True:  # until some node (the leader, as seen after a barrier) has claimed the run
        if claim.exists():  # noqa: ASYNC240
            return
        with contextlib.suppress(LazilyQueueError, TimeoutError):  # no leader just now
            await node.barrier()
            if node.is_leader and _claim(claim):
                break
        await asyncio.sleep(0.1)
    figures: dict[str, Any] = {"node": node.node_id}
    try:
        for name in options["phases"]:
            figures.update(await PHASES[name](node, int(options["count"]),
                                              int(options["samples"])))
        figures["leader_at_end"] = node.is_leader
    except Exception as exc:
        figures = {"error": f"{type(exc).__name__}: {exc}"}
    partial = result.with_suffix(".partial")
    partial.write_text(json.dumps(figures))
    partial.replace(result)
