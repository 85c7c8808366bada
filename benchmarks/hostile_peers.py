"""Hostile strangers against a member: its memory and the cluster's commits meanwhile.

    python benchmarks/hostile_peers.py [--json] [--quick] [--seconds S]

Three ``lazily-queue node`` processes over TCP on 127.0.0.1; node 1 runs four pushers
(each push committed on a majority before the next). The flood, aimed at node 1's
Raft port from this process, mixes:

- ``big``: connections announcing a 16 MiB frame, then sending up to 15 MiB of it and
  trickling the rest, 32 from 127.0.0.1 and one from each of 127.0.0.2..33;
- ``silent``: 64 connections from 127.0.0.1 that send nothing (held until closed);
- ``garbage``: random bytes; ``churn``: connect and close at once, in loops.

Printed: node 1's resident memory (``VmRSS``) before, at its peak during and after the
flood, and committed pushes/s (growth of the replicated queue as node 1 reports it)
without and during the flood, plus the connections node 1 refused over its caps.
With ``--json`` the last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lazily_queue.demo.processes import NodeProcess  # noqa: E402

SECRET_ENV = "LAZILY_HOSTILE_SECRET"
BIG_FRAME = (16 * 1024 * 1024).to_bytes(4, "big")
APP = '''
import asyncio


async def pushers(node, options):
    await node.wait_for_leader()
    queue = node.queue("flood")

    async def push_forever():
        while True:
            try:
                await queue.push(1, timeout=5.0)
            except Exception:
                await asyncio.sleep(0.05)

    await asyncio.gather(*(push_forever() for _ in range(int(options["pushers"]))))
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int, key: str = "VmRSS") -> int:
    """Resident memory of ``pid`` in KiB from /proc (``VmHWM`` for its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} for pid {pid}")


# -- the cluster ----------------------------------------------------------------------------


class Cluster:
    """Three node processes over TCP; node 1 pushes continuously."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ports = {i: free_port() for i in (1, 2, 3)}
        (root / "flood_app.py").write_text(APP)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(ROOT)]))
        env[SECRET_ENV] = "hostile-peers-benchmark-secret"
        self.nodes = [
            NodeProcess(i, self._config(i), cwd=root, env=env, log_path=root / f"n{i}.log")
            for i in (1, 2, 3)
        ]

    def _config(self, node_id: int) -> Path:
        lines = [
            f"id = {node_id}",
            'cluster = "hostile"',
            f'data_dir = "data{node_id}"',
            'http = "127.0.0.1:0"',
            'durability = "none"',
            f'secret_env = "{SECRET_ENV}"',
            "[peers]",
            *(f'{i} = "tcp://127.0.0.1:{port}"' for i, port in self.ports.items()),
        ]
        if node_id == 1:
            lines += ["[app]", 'entry = "flood_app:pushers"', "pushers = 4"]
        path = self.root / f"n{node_id}.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    @property
    def target(self) -> NodeProcess:
        return self.nodes[0]

    async def start(self) -> None:
        for node in self.nodes:
            await node.start()
        for node in self.nodes:
            await node.wait_ready(30)

    async def stop(self) -> None:
        for node in self.nodes:
            await node.stop()

    async def status(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        await self.target.poll(session, timeout=5.0)
        if self.target.status is None:
            raise RuntimeError(f"node 1 does not answer: {self.target.log_tail()}")
        return self.target.status

    async def committed(self, session: aiohttp.ClientSession) -> int:
        queues = (await self.status(session)).get("queues", {})
        return int(queues.get("flood", {}).get("len", 0))


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Body = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

# -- the flood ------------------------------------------------------------------------------


@dataclass
class Flood:
    """Hostile connections against ``port`` until ``stop`` is set."""

    port: int
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    attempts: dict[str, int] = field(default_factory=dict)

    async def run(self) -> None:
        workers = [self._big("127.0.0.1") for _ in range(32)]
        workers += [self._big(f"127.0.0.{n}") for n in range(2, 34)]
        workers += [self._silent() for _ in range(64)]
        workers += [self._garbage() for _ in range(8)]
        workers += [self._churn() for _ in range(8)]
        await asyncio.gather(*workers)

    async def _connect(self, kind: str, source: str) -> Stream | None:
        self.attempts[kind] = self.attempts.get(kind, 0) + 1
        try:
            return await asyncio.open_connection("127.0.0.1", self.port, local_addr=(source, 0))
        except OSError:
            await asyncio.sleep(0.1)
            return None

    async def _loop(self, kind: str, body: Body, source: str = "127.0.0.1") -> None:
        while not self.stop.is_set():
            stream = await self._connect(kind, source)
            if stream is None:
                continue
            try:
                await body(*stream)
            except (OSError, asyncio.IncompleteReadError):
                pass  # the member closed us: that is the point
            finally:
                stream[1].transport.abort()
            await asyncio.sleep(0.1)

    async def _until_closed(self, reader: asyncio.StreamReader) -> None:
        """Read (the member's hello) until the member closes us or the flood ends."""
        while not self.stop.is_set():
            try:
                if not await asyncio.wait_for(reader.read(65536), 0.2):
                    return
            except TimeoutError:
                continue

    async def _big(self, source: str) -> None:
        async def body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(BIG_FRAME)
            chunk = b"\0" * 65536
            for _ in range(15 * 16):  # 15 MiB of the announced 16
                if self.stop.is_set():
                    return
                writer.write(chunk)
                await writer.drain()
            while not self.stop.is_set():  # then trickle
                writer.write(b"\0")
                await writer.drain()
                await asyncio.sleep(0.2)

        await self._loop("big", body, source)

    async def _silent(self) -> None:
        async def body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._until_closed(reader)

        await self._loop("silent", body)

    async def _garbage(self) -> None:
        async def body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(os.urandom(4096))
            await writer.drain()
            await self._until_closed(reader)

        await self._loop("garbage", body)

    async def _churn(self) -> None:
        async def body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            return

        await self._loop("churn", body)


# -- the measurement ------------------------------------------------------------------------


async def phase(
    cluster: Cluster, session: aiohttp.ClientSession, seconds: float
) -> dict[str, float]:
    """Commits/s and node 1's RSS (mean and peak, MiB) over ``seconds``."""
    pid = cluster.target.pid
    assert pid is not None
    start_commits, start = await cluster.committed(session), time.monotonic()
    samples: list[int] = []
    while time.monotonic() - start < seconds:
        samples.append(rss_kib(pid))
        await asyncio.sleep(0.1)
    commits = await cluster.committed(session) - start_commits
    elapsed = time.monotonic() - start
    return {
        "seconds": round(elapsed, 2),
        "commits": commits,
        "commits_per_s": round(commits / elapsed, 1),
        "rss_mib": round(sum(samples) / len(samples) / 1024, 1),
        "rss_peak_mib": round(max(samples) / 1024, 1),
    }


async def measure(seconds: float) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="lq-hostile-"))
    cluster = Cluster(root)
    try:
        await cluster.start()
        async with aiohttp.ClientSession() as session:
            deadline = time.monotonic() + 30
            while await cluster.committed(session) < 50:  # the leader is up, pushes flow
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no pushes committed: {cluster.target.log_tail()}")
                await asyncio.sleep(0.2)
            quiet = await phase(cluster, session, seconds)
            flood = Flood(cluster.ports[1])
            flooding = asyncio.create_task(flood.run())
            try:
                during = await phase(cluster, session, seconds)
            finally:
                flood.stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(flooding, 10)
            await asyncio.sleep(2)
            after = await phase(cluster, session, seconds)
            pid = cluster.target.pid
            assert pid is not None
            listener = (await cluster.status(session)).get("listener", {})
            return {
                "seconds_per_phase": seconds,
                "without_flood": quiet,
                "during_flood": during,
                "after_flood": after,
                "rss_before_mib": quiet["rss_mib"],
                "rss_peak_during_mib": during["rss_peak_mib"],
                "rss_after_mib": after["rss_mib"],
                "rss_hwm_mib": round(rss_kib(pid, "VmHWM") / 1024, 1),
                "rss_growth_mib": round(during["rss_peak_mib"] - quiet["rss_mib"], 1),
                "flood_connection_attempts": dict(flood.attempts),
                "refused_connections": listener.get("refused_connections"),
                "node1_alive": cluster.target.alive,
            }
    finally:
        await cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="3 s phases instead of 8 s")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per phase")
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 8.0)
    figures = asyncio.run(measure(seconds))
    for name in ("without_flood", "during_flood", "after_flood"):
        p = figures[name]
        print(f"{name:14} {p['commits_per_s']:8.1f} commits/s   node 1 RSS {p['rss_mib']:6.1f} MiB"
              f" (peak {p['rss_peak_mib']:.1f})")
    print(f"RSS growth during the flood: {figures['rss_growth_mib']} MiB; "
          f"lifetime peak (VmHWM) {figures['rss_hwm_mib']} MiB")
    print(f"flood connection attempts: {figures['flood_connection_attempts']}; "
          f"refused over the caps: {figures['refused_connections']}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
