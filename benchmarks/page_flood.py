"""A stranger holding a member's HTTP connections: what the other members then see of it.

    python benchmarks/page_flood.py [--json] [--seconds S] [--sources N]

Three ``lazily-queue node`` processes over TCP on 127.0.0.1 (no load). A stranger
holds connections to node 2's page from ``N`` addresses 127.0.0.2.. (32 each, the
per-source cap), each sending half a request and reconnecting at once when the page
closes it (after its 15 s idle limit, or at once over a cap). Meanwhile, every 0.5 s:
how many of the stranger's connections are held (open for 0.5 s or more), whether
node 1's status shows node 2's vitals as current (read without error), their age, and
whether a member's read of node 2's vitals from 127.0.0.1 (with a nonce, as node 1
reads them) is answered. Printed: those figures before, during and after the flood.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from hostile_peers import Cluster

from lazily_queue.peer_pages import fetch_page
from lazily_queue.vitals_proof import NONCE_HEADER, new_nonce

PER_SOURCE = 32
HALF_REQUEST = b"GET /status.json HTTP/1.1\r\nHost: x\r\n"


class QuietCluster(Cluster):
    """:class:`hostile_peers.Cluster` without its pushers."""

    def _config(self, node_id: int) -> Path:
        path = super()._config(node_id)
        path.write_text(path.read_text().split("[app]")[0])
        return path


class Holder:
    """The stranger's connections to ``port`` (module docstring)."""

    def __init__(self, port: int, sources: int) -> None:
        self.port = port
        self.sources = [f"127.0.0.{n}" for n in range(2, 2 + sources)]
        self.opened: dict[int, float] = {}
        self.connects = 0
        self.stop = asyncio.Event()

    def held(self) -> int:
        now = time.monotonic()
        return sum(1 for t in self.opened.values() if now - t >= 0.5)

    async def run(self) -> None:
        await asyncio.gather(*(self._hold(source, slot) for source in self.sources
                               for slot in range(PER_SOURCE)))

    async def _hold(self, source: str, slot: int) -> None:
        key = hash((source, slot))
        while not self.stop.is_set():
            self.connects += 1
            try:
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, local_addr=(source, 0))
            except OSError:
                await asyncio.sleep(0.05)
                continue
            self.opened[key] = time.monotonic()
            try:
                writer.write(HALF_REQUEST)
                while not self.stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        if not await asyncio.wait_for(reader.read(4096), 0.2):
                            break
            except OSError:
                pass
            finally:
                self.opened.pop(key, None)
                writer.transport.abort()


async def sample(cluster: QuietCluster, session: aiohttp.ClientSession, page: str,
                 holder: Holder | None, seconds: float) -> dict[str, Any]:
    """Figures over ``seconds`` (module docstring)."""
    rows = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        status = await cluster.status(session)
        entry = next(m for m in status["members"] if m["id"] == "2")
        try:
            await fetch_page(page + "/vitals.json", timeout=1.5,
                             headers={NONCE_HEADER: new_nonce()})
            read = True
        except (OSError, TimeoutError, ValueError):
            read = False
        at = entry.get("vitals_at")
        rows.append({"held": 0 if holder is None else holder.held(),
                     "current": entry.get("vitals_error") is None and at is not None,
                     "age": None if at is None else time.time() - at, "read": read,
                     "error": entry.get("vitals_error")})
        await asyncio.sleep(0.5)
    ages = [r["age"] for r in rows if r["age"] is not None]
    errors = sorted({r["error"][:90] for r in rows if r["error"]})
    return {"samples": len(rows), "held_max": max(r["held"] for r in rows),
            "current_share": round(sum(r["current"] for r in rows) / len(rows), 2),
            "vitals_age_max_s": round(max(ages), 1) if ages else None,
            "member_reads_answered": f"{sum(r['read'] for r in rows)}/{len(rows)}",
            "errors": errors}


async def measure(seconds: float, sources: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="lq-page-flood-"))
    cluster = QuietCluster(root)
    try:
        await cluster.start()
        page = cluster.nodes[1].url
        assert page is not None
        port = int(page.rsplit(":", 1)[1].strip("/"))
        async with aiohttp.ClientSession() as session:
            deadline = time.monotonic() + 30
            while True:  # node 1 has read node 2's vitals
                entry = next(m for m in (await cluster.status(session))["members"]
                             if m["id"] == "2")
                if entry.get("vitals_at") and not entry.get("vitals_error"):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node 1 never read node 2's vitals: {entry}")
                await asyncio.sleep(0.2)
            before = await sample(cluster, session, page, None, 5)
            holder = Holder(port, sources)
            holding = asyncio.create_task(holder.run())
            try:
                during = await sample(cluster, session, page, holder, seconds)
            finally:
                holder.stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(holding, 10)
            after = await sample(cluster, session, page, None, 8)
            return {"seconds": seconds, "sources": sources, "before": before,
                    "during": during, "after": after, "stranger_connects": holder.connects}
    finally:
        await cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--seconds", type=float, default=40.0, help="seconds of flood")
    parser.add_argument("--sources", type=int, default=8, help="the stranger's addresses")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.seconds, args.sources))
    for name in ("before", "during", "after"):
        p = figures[name]
        print(f"{name:7} held {p['held_max']:4}  node 1 shows node 2's vitals current in "
              f"{p['current_share']:.0%} of {p['samples']} samples (oldest "
              f"{p['vitals_age_max_s']} s)  member reads answered {p['member_reads_answered']}")
        for error in p["errors"]:
            print(f"        node 1 says: {error}")
    print(f"stranger connects: {figures['stranger_connects']}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    sys.exit(main())
