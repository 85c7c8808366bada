"""Three real node processes over Unix sockets through a fault proxy, under load.

The leader is SIGKILLed and restarted, SIGSTOPped and continued, isolated; frames
are dropped, in one direction or both. Afterwards the whole cluster restarts from
disk in this process, and the simulator's checker runs on the recorded history:
every batch each process applied and every operation its clients issued.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import time
from pathlib import Path

import aiohttp
import pytest

from lazily_queue.demo.processes import NodeProcess
from lazily_queue.node import Node
from lazily_queue.raft.network import LocalHub
from simulator import ledger as L
from simulator.chaos_app import _record_applies
from simulator.checker import Checker
from simulator.history import History
from simulator.proxy import FaultProxy

ROOT = Path(__file__).resolve().parents[2]
SECRET_ENV = "LAZILY_CHAOS_SECRET"
MEMBERS = [1, 2, 3]
CHAOS_SECONDS = float(os.environ.get("LAZILY_CHAOS_SECONDS", "25"))
pytestmark = pytest.mark.slow


def _config(tmp: Path, proxy: FaultProxy, node: int, incarnation: int, seed: int) -> Path:
    peers = "\n".join(f'{j} = "{proxy.address(node, j)}"' for j in MEMBERS if j != node)
    path = tmp / f"node{node}-{incarnation}.toml"
    path.write_text(f"""id = {node}
cluster = "chaos"
data_dir = "{tmp}/data{node}"
listen = "unix://{proxy.target(node)}"
http = "127.0.0.1:0"
durability = "fsync"
secret_env = "{SECRET_ENV}"
startup_timeout = 0

[peers]
{peers}

[app]
entry = "simulator.chaos_app:main"
ledger = "{tmp}/ledger{node}"
stop_file = "{tmp}/stop"
incarnation = {incarnation}
seed = {seed}
visibility_ms = 1500
max_deliveries = 3
""")
    return path


class Chaos:
    """The node processes, the proxy and the faults."""

    def __init__(self, tmp: Path, seed: int) -> None:
        self.tmp = tmp
        self.rng = random.Random(seed)
        self.seed = seed
        self.proxy = FaultProxy(tmp, MEMBERS, seed)
        self.env = dict(os.environ, **{SECRET_ENV: secrets.token_hex(16)})
        self.env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{self.env.get('PYTHONPATH', '')}"
        self.incarnations = dict.fromkeys(MEMBERS, 0)
        self.procs: dict[int, NodeProcess] = {}
        self.stopped: set[int] = set()
        self.log: list[str] = []

    async def start(self, node: int) -> None:
        self.incarnations[node] += 1
        config = _config(self.tmp, self.proxy, node, self.incarnations[node], self.seed)
        proc = NodeProcess(node, config, cwd=ROOT, env=self.env,
                           log_path=self.tmp / f"node{node}.log")
        self.procs[node] = proc
        await proc.start()

    async def leader(self, session: aiohttp.ClientSession) -> int | None:
        for node, proc in self.procs.items():
            if node in self.stopped:
                continue
            await proc.poll(session, timeout=0.5)
            if proc.status is not None and proc.status.get("state") == "leader":
                return node
        return None

    async def fault(self, session: aiohttp.ClientSession) -> None:
        leader = await self.leader(session)
        target = leader if leader is not None else self.rng.choice(MEMBERS)
        # The first fault is a kill (every run kills a member at least once), then any.
        kind = ("kill" if not self.log
                else self.rng.choice(["kill", "kill", "stop", "isolate", "drop", "one-way"]))
        self.log.append(f"{time.monotonic():.1f} {kind} {target} (leader {leader})")
        if kind == "kill":
            self.procs[target].kill()
            await self.procs[target].stop()
            await asyncio.sleep(self.rng.uniform(0.5, 2.0))
            await self.start(target)
        elif kind == "stop":
            pid = self.procs[target].pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            self.stopped.add(target)
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))
            os.kill(pid, signal.SIGCONT)
            self.stopped.discard(target)
        elif kind == "isolate":
            self.proxy.isolate(target)
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))
            self.proxy.heal()
        else:
            others = [m for m in MEMBERS if m != target]
            for other in others:
                self.proxy.drop[(target, other)] = 1.0 if kind == "one-way" else 0.2
                if kind == "drop":
                    self.proxy.drop[(other, target)] = 0.2
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))
            self.proxy.heal()


async def _final_state(tmp: Path) -> tuple[dict[str, object], Path]:
    """Restart the cluster from disk here, record what it applies, return the state."""
    hub = LocalHub()
    nodes = [Node(n, data_dir=tmp / f"data{n}", peers={i: "-" for i in MEMBERS},
                  network=hub.network(str(n)), cluster="chaos", durability="fsync")
             for n in MEMBERS]
    path = tmp / "ledger-final"
    writer = L.LedgerWriter(path)
    for node in nodes:
        await node.start()
        _record_applies(node, writer)
    try:
        await nodes[0].wait_for_leader(timeout=30)
        for node in nodes:
            await node.barrier(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            applied = {n.driver.replica.engine.last_applied for n in nodes}
            commits = {n.driver.replica.engine.commit_index for n in nodes}
            if len(applied) == 1 and applied == commits:
                break
            await asyncio.sleep(0.05)
        states = [n.view.capture() for n in nodes]
    finally:
        for node in nodes:
            await node.stop()
        writer.close()
    for state in states[1:]:
        assert state == states[0], "replicas differ after restarting from disk"
    return states[0], path


async def test_processes_through_a_fault_proxy_keep_every_property(tmp_path: Path) -> None:
    chaos = Chaos(tmp_path, seed=int.from_bytes(os.urandom(2), "big"))
    await chaos.proxy.start()
    try:
        for node in MEMBERS:
            await chaos.start(node)
        for proc in chaos.procs.values():
            await proc.wait_ready(60)
        async with aiohttp.ClientSession() as session:
            end = time.monotonic() + CHAOS_SECONDS
            while time.monotonic() < end:
                await asyncio.sleep(chaos.rng.uniform(0.5, 1.5))
                await chaos.fault(session)
            chaos.proxy.heal()
            (tmp_path / "stop").touch()
            markers = [tmp_path / f"ledger{n}.drained" for n in MEMBERS]
            for _ in range(450):
                if _all_exist(markers):
                    break
                await asyncio.sleep(0.2)
            assert _all_exist(markers), (
                f"the workload did not drain: {chaos.log}\n"
                + "\n".join(p.log_tail() for p in chaos.procs.values()))
    finally:
        for proc in chaos.procs.values():
            await proc.stop()
        await chaos.proxy.stop()
    state, final = await _final_state(tmp_path)
    _check(tmp_path, final, state, chaos)


def _all_exist(paths: list[Path]) -> bool:
    return all(p.exists() for p in paths)


def _check(tmp_path: Path, final: Path, state: dict[str, object], chaos: Chaos) -> None:
    history = History()
    ledgers = [*sorted(tmp_path.glob("ledger[0-9].*[0-9]")), final]
    clients = L.load(ledgers, history)
    checker = Checker(history, clients)
    checker.replay()
    checker.check_clients()
    checker.check_final(state)
    checker.check_drained()
    acked = sum(1 for c in clients for o in c.ops if o.outcome == "ok")
    kills = sum(1 for line in chaos.log if " kill " in line)
    assert acked > 200 and kills >= 1, (acked, chaos.log)
    print(f"chaos seed {chaos.seed}: {len(chaos.log)} faults ({kills} kills), {acked} "
          f"acknowledged ops, {checker.ops} checked, proxy dropped {chaos.proxy.dropped}")
