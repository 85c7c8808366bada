"""persist-queue for ``benchmarks/peers.py``: the embedded, one-member comparison.

``SQLiteAckQueue`` (SQLite WAL; ``synchronous=FULL`` set explicitly, so every commit
fsyncs) for put latency and serial get+ack, ``SQLiteQueue`` (same settings) for serial
destructive gets (the pop row). One thread, one operation at a time, as an embedded
queue is used.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import persistqueue

from benchmarks.peers_common import PAYLOAD, percentiles, rate


def _full_sync(queue: Any) -> None:
    """Set ``synchronous=FULL`` on the queue's connections (persist-queue has no option
    for it; SQLite's compiled-in default is not guaranteed)."""
    for conn in {id(c): c for c in (queue._putter, queue._getter)}.values():
        conn.execute("PRAGMA synchronous=FULL")
        if conn.execute("PRAGMA synchronous").fetchone()[0] != 2:
            raise RuntimeError("SQLite refused synchronous=FULL")


def _measure(root: Path, samples: int) -> dict[str, Any]:
    acks = persistqueue.SQLiteAckQueue(str(root / "ack"), auto_commit=True)
    _full_sync(acks)
    acks.put(PAYLOAD)  # warm-up
    acks.ack(id=acks.get(block=False, raw=True)["pqid"])
    puts: list[float] = []
    started = time.perf_counter()
    for _ in range(samples):
        t0 = time.perf_counter()
        acks.put(PAYLOAD)
        puts.append(time.perf_counter() - t0)
    put_rate = rate(samples, time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(samples):
        item = acks.get(block=False, raw=True)
        acks.ack(id=item["pqid"])
    get_ack_rate = rate(samples, time.perf_counter() - started)
    acks.close()

    plain = persistqueue.SQLiteQueue(str(root / "plain"), auto_commit=True)
    _full_sync(plain)
    for _ in range(samples):
        plain.put(PAYLOAD)
    started = time.perf_counter()
    for _ in range(samples):
        plain.get(block=False)
    pop_rate = rate(samples, time.perf_counter() - started)
    plain.close()
    p50, p99 = percentiles(puts)
    return {"p50_ms_1": p50, "p99_ms_1": p99, "serial_claim_ack_per_s_1": get_ack_rate,
            "serial_pop_per_s_1": pop_rate, "pop_each_per_s_1": pop_rate,
            "put_per_s_1": put_rate}


async def run(root: Path, count: int, samples: int, latency: bool = False) -> dict[str, Any]:
    """Its rows (all quick: ``latency`` changes nothing)."""
    root.mkdir(parents=True)  # noqa: ASYNC240 - set-up
    figures = await asyncio.to_thread(_measure, root, samples)
    version = getattr(persistqueue, "__version__", "?")
    figures["notes"] = [
        f"persist-queue {version}: SQLiteAckQueue put (p50/p99) and get+ack, SQLiteQueue "
        "get for the pop row; SQLite WAL with synchronous=FULL (an fsync per commit); one "
        "thread, one operation at a time"]
    return figures
