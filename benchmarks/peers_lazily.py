"""lazily-queue for ``benchmarks/peers.py``: ``lazily-queue node`` processes over Unix
sockets with ``durability = "fsync"``, the workload an ``[app]`` inside the leader
(:mod:`benchmarks.peers_app`).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from pathlib import Path
from typing import Any

from benchmarks.peers_common import node_env, start_nodes
from lazily_queue.demo.processes import NodeProcess

ROOT = Path(__file__).resolve().parents[1]
SECRET_ENV = "LAZILY_PEERS_SECRET"
CLUSTER_PHASES = ["produce", "end_to_end", "work_queue", "fanout", "latency_3"]
MEMBER_PHASES = ["latency_1", "serial_pop", "pop_each", "serial_claim_ack"]


def _config(root: Path, node: int, members: list[int], app: dict[str, Any]) -> Path:
    peers = "\n".join(f'{i} = "unix://{root}/n{i}.sock"' for i in members)
    lines = [f"id = {node}", 'cluster = "peers-bench"', f'data_dir = "{root}/d{node}"',
             f'listen = "unix://{root}/n{node}.sock"', 'durability = "fsync"',
             f'secret_env = "{SECRET_ENV}"', "startup_timeout = 60", "", "[peers]", peers, "",
             "[app]", *(f"{key} = {json.dumps(value)}" for key, value in app.items())]
    path = root / f"node{node}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def run_members(root: Path, size: int, phases: list[str], count: int, samples: int,
                      timeout: float) -> dict[str, Any]:
    """Start ``size`` node processes, run ``phases`` in the leader, stop them all."""
    root.mkdir(parents=True)  # noqa: ASYNC240 - set-up
    result = root / "result.json"
    app = {"entry": "benchmarks.peers_app:run", "phases": phases, "count": count,
           "samples": samples, "result": str(result), "claim": str(root / "claim")}
    env = node_env(**{SECRET_ENV: secrets.token_hex(16)})
    members = list(range(1, size + 1))
    procs = [NodeProcess(i, _config(root, i, members, app), cwd=ROOT, env=env,
                         log_path=root / f"node{i}.log") for i in members]
    try:
        await start_nodes(procs)
        deadline = time.monotonic() + timeout
        while not result.exists():
            dead = [p for p in procs if not p.alive]
            if dead:
                raise RuntimeError(f"node {dead[0].node_id} exited: {dead[0].log_tail(5)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no result within {timeout:.0f}s (phases {phases})")
            await asyncio.sleep(0.1)
        figures: dict[str, Any] = json.loads(result.read_text())
    finally:
        for proc in procs:
            await proc.stop()
    if "error" in figures:
        raise RuntimeError(f"the benchmark app failed: {figures['error']}")
    return figures


async def run(root: Path, count: int, samples: int, latency: bool = False) -> dict[str, Any]:
    """Every phase, or with ``latency`` the 1-in-flight latency phases only."""
    timeout = 600.0 + count * 0.05
    cluster_phases = ["latency_3"] if latency else CLUSTER_PHASES
    member_phases = ["latency_1"] if latency else MEMBER_PHASES
    cluster = await run_members(root / "three", 3, cluster_phases, count, samples, timeout)
    single = await run_members(root / "one", 1, member_phases, count, samples, timeout)
    figures = {**{k: v for k, v in cluster.items() if k not in ("node", "leader_at_end")},
               **{k: v for k, v in single.items() if k not in ("node", "leader_at_end")}}
    notes = ["lazily-queue: 3 `lazily-queue node` processes over Unix sockets, "
             "durability=fsync (acknowledged = fsynced on a majority), workload in an [app] "
             "of the leader; one-member rows: a single node process; its serial pop and "
             "claim+ack rows are consumer loops (`async for` over the queue, `deliveries()`), "
             "where one commit pops or leases up to the prefetch and a loop iteration's acks "
             "go in one entry; the pop-one-at-a-time row is `await queue.pop()`, a commit each"]
    if not cluster.get("leader_at_end", True):
        notes.append("lazily-queue: leadership moved during the 3-member run")
    return {**figures, "notes": notes}
