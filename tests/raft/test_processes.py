"""Real node processes over Unix sockets: the leader is SIGKILLed again and again.

Every push a producer saw acknowledged must be in the queue exactly once after the
whole cluster restarts from disk, and nothing may be in it twice.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from lazily_queue.demo.processes import NodeProcess
from lazily_queue.node import Node
from lazily_queue.raft.network import LocalHub

ROOT = Path(__file__).resolve().parents[2]
SECRET_ENV = "LAZILY_TEST_SECRET"
pytestmark = pytest.mark.slow


def _config(tmp: Path, node: int, incarnation: int) -> Path:
    peers = "\n".join(f'{i} = "unix://{tmp}/n{i}.sock"' for i in (1, 2, 3))
    path = tmp / f"node{node}-{incarnation}.toml"
    path.write_text(
        f"""id = {node}
cluster = "chaos"
data_dir = "{tmp}/data{node}"
listen = "unix://{tmp}/n{node}.sock"
http = "127.0.0.1:0"
durability = "fsync"
secret_env = "{SECRET_ENV}"
startup_timeout = 30

[peers]
{peers}

[app]
entry = "tests.raft.proc_app:producer"
ledger = "{tmp}/ledger{node}.log"
stop_file = "{tmp}/stop"
incarnation = {incarnation}
"""
    )
    return path


async def _leader(procs: dict[int, NodeProcess], session: aiohttp.ClientSession) -> int | None:
    for node, proc in procs.items():
        await proc.poll(session)
        if proc.status is not None and proc.status.get("state") == "leader":
            return node
    return None


async def test_sigkill_of_the_leader_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    env = dict(os.environ, **{SECRET_ENV: secrets.token_hex(16)})
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    incarnations = dict.fromkeys((1, 2, 3), 0)

    def process(node: int) -> NodeProcess:
        incarnations[node] += 1
        return NodeProcess(node, _config(tmp_path, node, incarnations[node]), cwd=ROOT,
                           env=env, log_path=tmp_path / f"node{node}.log")

    procs = {n: process(n) for n in (1, 2, 3)}
    for proc in procs.values():
        await proc.start()
    for proc in procs.values():
        await proc.wait_ready(60)
    kills = 0
    async with aiohttp.ClientSession() as session:
        try:
            for _ in range(3):
                await asyncio.sleep(1.5)
                leader = None
                deadline = time.monotonic() + 20
                while leader is None and time.monotonic() < deadline:
                    leader = await _leader(procs, session)
                    await asyncio.sleep(0.05)
                assert leader is not None, "no leader"
                procs[leader].kill()
                await procs[leader].stop()
                kills += 1
                new = None
                deadline = time.monotonic() + 20
                while new in (None, leader) and time.monotonic() < deadline:
                    new = await _leader({n: p for n, p in procs.items() if n != leader}, session)
                    await asyncio.sleep(0.05)
                assert new not in (None, leader), "no new leader after the kill"
                procs[leader] = process(leader)
                await procs[leader].start()
                await procs[leader].wait_ready(60)
            await asyncio.sleep(1.0)
        finally:
            (tmp_path / "stop").touch()
            for proc in procs.values():
                await proc.stop()
    assert kills == 3

    acked: set[str] = set()
    unknown: set[str] = set()
    for node in (1, 2, 3):
        for line in (tmp_path / f"ledger{node}.log").read_text().splitlines():
            kind, item = line.split()[:2]
            (acked if kind == "ack" else unknown).add(item)
    assert len(acked) > 100, f"too few acknowledged pushes ({len(acked)}) to mean anything"

    # Restart the whole cluster from its data directories and read the queue.
    hub = LocalHub()
    nodes = [
        Node(n, data_dir=tmp_path / f"data{n}", peers={i: "-" for i in (1, 2, 3)},
             network=hub.network(str(n)), cluster="chaos", durability="fsync")
        for n in (1, 2, 3)
    ]
    for node in nodes:
        await node.start()
    try:
        await nodes[0].wait_for_leader(timeout=20)
        for node in nodes:
            await node.barrier()
        contents = [n.view.queues["chaos"].elements() for n in nodes]
    finally:
        for node in nodes:
            await node.stop()
    assert contents[0] == contents[1] == contents[2], "replicas diverged"
    counts = Counter(contents[0])
    duplicates = {item: c for item, c in counts.items() if c > 1}
    assert not duplicates, f"duplicated items: {sorted(duplicates)[:10]}"
    lost = acked - set(counts)
    assert not lost, f"{len(lost)} acknowledged pushes lost, e.g. {sorted(lost)[:10]}"
    stray = set(counts) - acked - unknown
    # Committed pushes whose producer was killed (or stopped at the end) before it could
    # record the acknowledgement: at most one per producer incarnation, its last push.
    last: dict[str, int] = {}
    for item in acked | unknown:
        producer, n = item.rsplit(":", 1)
        last[producer] = max(last.get(producer, -1), int(n))
    by_producer = Counter(item.rsplit(":", 1)[0] for item in stray)
    assert all(c == 1 for c in by_producer.values()), sorted(stray)
    for item in stray:
        producer, n = item.rsplit(":", 1)
        assert int(n) > last.get(producer, -1), f"{item} is not its producer's last push"
    print(f"kills=3 acked={len(acked)} unknown={len(unknown)} in_flight_at_kill={len(stray)} "
          f"queue={len(counts)} python={sys.version.split()[0]}")
