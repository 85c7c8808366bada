"""The push workload on stock PySyncObj 0.3.17, for ``raft_queue.py``'s comparison.

Its own TCP transport and threads, default settings, one replicated command per push;
it never fsyncs. It must run in a process that never imported ``lazily_queue``, whose
process-wide patches (restricted unpickling among them) keep stock PySyncObj's TCP
messages from being read: ``raft_queue.stock`` runs :func:`stock` in a fresh interpreter.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from benchmarks.peers_common import free_port, percentiles


def stock(count: int) -> dict[str, Any]:
    """Pushes/s and p50/p99 with 1 and 256 in flight, through a follower of 3 nodes."""
    from pysyncobj import SyncObj, replicated

    class StockQueue(SyncObj):  # type: ignore[misc]
        def __init__(self, me: str, others: list[str]) -> None:
            super().__init__(me, others)
            self.items: list[Any] = []

        @replicated  # type: ignore[misc]
        def push(self, value: Any) -> None:
            self.items.append(value)

    ports = [free_port() for _ in range(3)]
    addrs = [f"127.0.0.1:{p}" for p in ports]
    nodes = [StockQueue(a, [b for b in addrs if b != a]) for a in addrs]
    try:
        while not any(n._isLeader() for n in nodes):
            time.sleep(0.05)
        time.sleep(0.5)
        follower = next(n for n in nodes if not n._isLeader())
        out: dict[str, Any] = {}
        for inflight in (1, 256):
            n = count if inflight > 1 else max(20, count // 200)
            lat: list[float] = []
            done = threading.Semaphore(0)
            slots = threading.Semaphore(inflight)

            def finished(
                res: Any, err: Any, start: float, lat: list[float] = lat,
                slots: threading.Semaphore = slots, done: threading.Semaphore = done,
            ) -> None:
                lat.append(time.perf_counter() - start)
                slots.release()
                done.release()

            started = time.perf_counter()
            for i in range(n):
                slots.acquire()
                t0 = time.perf_counter()
                follower.push(i, callback=lambda r, e, t0=t0: finished(r, e, t0))
            for _ in range(n):
                done.acquire()
            elapsed = time.perf_counter() - started
            p50, p99 = percentiles(lat)
            out[f"inflight_{inflight}"] = {"pushes": n, "pushes_per_s": round(n / elapsed),
                                           "p50_ms": p50, "p99_ms": p99}
        return out
    finally:
        for node in nodes:
            node.destroy()
        time.sleep(0.3)
