"""The cluster demo: three node processes, producers and workers, a leader SIGKILLed.

Each node is a real ``lazily-queue node --config FILE`` process (Unix sockets, TCP,
or WebRTC through a ``lazily-queue signaling`` process with a token; fsync) running
:mod:`lazily_queue.demo.workload` as its app: one producer and competing
workers on the replicated work queue ``demo.jobs``. The cluster secret is generated
per run and handed to the nodes in an environment variable. Once a share of the jobs
is acknowledged the demo SIGKILLs the leader, measures the failover (the kill to the
new leader's first commit in its term, as that node recorded it), restarts the killed
node and waits until every job is processed and every replica has applied the same
log. The verdict comes from the ledger (see :mod:`lazily_queue.demo.ledger`).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from rich.console import Console

from .ledger import Ledger, Tally
from .processes import NodeProcess, Signaling, free_ports
from .report import Display, Failover, Summary

SECRET_ENV = "LAZILY_DEMO_SECRET"
SIGNALING_ENV = "LAZILY_DEMO_SIGNALING"
TRANSPORTS = ("unix", "tcp", "webrtc")
MARKER = ".lazily-demo-dir"
NODES = (1, 2, 3)


@dataclass
class ClusterDemoConfig:
    directory: Path = Path(".lazily-demo")
    items: int = 400
    """Jobs per producer (one producer per node)."""
    rate: float = 120.0
    workers: int = 2
    work_ms: float = 20.0
    fail_rate: float = 0.02
    visibility_timeout: float = 2.0
    kill_at: float = 0.3
    """Kill the leader once this share of all jobs is acknowledged (>= 1: never)."""
    restart_after: float = 1.0
    timeout: float = 55.0
    seed: int = 7
    durability: str = "fsync"
    progress: bool = True
    transport: str = "unix"
    """How the nodes link: ``unix`` sockets, ``tcp`` on loopback or ``webrtc``."""


@dataclass
class _Run:
    started: float = field(default_factory=time.monotonic)
    killed: NodeProcess | None = None
    kill_time: float | None = None
    old_term: int = 0
    failover: Failover | None = None
    restarted: bool = False
    restart_time: float = 0.0
    catch_up_target: int = 0
    caught_up: float | None = None


class ClusterDemo:
    """Runs the demo once; :meth:`run` returns the verified :class:`Summary`."""

    def __init__(self, config: ClusterDemoConfig, console: Console | None = None) -> None:
        self.config = config
        self.console = console or Console()
        self.dir = config.directory.resolve()
        self.nodes: list[NodeProcess] = []
        self.signaling: Signaling | None = None
        self.state = _Run()
        self.display = Display(config.items * len(NODES), self.console, config.progress)

    # -- setup ----------------------------------------------------------------------------

    def empty_dir(self) -> None:
        """Empty (or create) the demo directory."""
        if self.dir.exists():
            if not self.dir.is_dir():
                raise SystemExit(f"error: {self.dir} is not a directory; choose another --dir")
            if not (self.dir / MARKER).exists() and any(self.dir.iterdir()):
                raise SystemExit(f"error: {self.dir} exists and is not a demo directory; "
                                 "choose another --dir")
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        (self.dir / MARKER).write_text("created by `lazily-queue demo`; deleted by the next run\n")

    def prepare(self, addresses: dict[int, str]) -> Path:
        """Write the ledger and one config per node (nodes at ``addresses``)."""
        ledger_path = self.dir / "ledger.sqlite"
        Ledger(ledger_path, create=True).close()
        c = self.config
        peers = "\n".join(f'{n} = "{addresses[n]}"' for n in NODES)
        webrtc = (f'[webrtc]\nsignaling_token_env = "{SIGNALING_ENV}"\n\n'
                  if c.transport == "webrtc" else "")
        for n in NODES:
            (self.dir / f"node{n}.toml").write_text(
                f'id = {n}\ncluster = "demo"\ndata_dir = "data/{n}"\n'
                f'listen = "{addresses[n]}"\nhttp = "127.0.0.1:0"\n'
                f'durability = "{c.durability}"\nsecret_env = "{SECRET_ENV}"\n'
                f"startup_timeout = 20\n\n{webrtc}[peers]\n{peers}\n\n[app]\n"
                f'entry = "lazily_queue.demo.workload:run"\nledger = "{ledger_path}"\n'
                f"producer = {n}\nitems = {c.items}\nrate = {c.rate}\nworkers = {c.workers}\n"
                f"work_ms = {c.work_ms}\nfail_rate = {c.fail_rate}\nseed = {c.seed}\n"
                f"visibility_timeout = {c.visibility_timeout}\n"
            )
        return ledger_path

    # -- the run ----------------------------------------------------------------------------

    async def _addresses(self, env: dict[str, str]) -> dict[int, str]:
        transport = self.config.transport
        if transport == "unix":
            return {n: f"unix:node{n}.sock" for n in NODES}
        if transport == "tcp":
            return {n: f"tcp://127.0.0.1:{port}" for n, port in zip(NODES, free_ports(3),
                                                                     strict=True)}
        if transport != "webrtc":
            raise SystemExit(f"error: unknown transport {transport!r}; use "
                             f"{', '.join(TRANSPORTS)}")
        self.signaling = Signaling(self.dir / "signaling.log", env)
        url = await self.signaling.start()
        base = url.replace("ws://", "webrtc+ws://")
        return {n: f"{base}/demo?peer={n}" for n in NODES}

    async def run(self) -> Summary:
        env = dict(os.environ)
        env[SECRET_ENV] = secrets.token_urlsafe(32)
        env[SIGNALING_ENV] = secrets.token_urlsafe(24)
        self.empty_dir()
        try:
            ledger_path = self.prepare(await self._addresses(env))
        except BaseException:
            if self.signaling is not None:
                await self.signaling.stop()
            raise
        self.nodes = [
            NodeProcess(n, self.dir / f"node{n}.toml", cwd=self.dir, env=env,
                        log_path=self.dir / f"node{n}.log")
            for n in NODES
        ]
        ledger = Ledger(ledger_path)
        error: str | None = None
        try:
            async with aiohttp.ClientSession() as session:
                with self.display:
                    try:
                        await self._run(session, ledger)
                    except (RuntimeError, TimeoutError) as exc:
                        error = str(exc)
                    statuses = await self._final_statuses(session)
        finally:
            codes = await asyncio.gather(*(node.stop() for node in self.nodes))
            if self.signaling is not None:
                await self.signaling.stop()
        tally = ledger.tally(since=self.state.kill_time)
        ledger.close()
        resumed = None
        if tally.first_ack_after is not None and self.state.kill_time is not None:
            resumed = tally.first_ack_after - self.state.kill_time
        return Summary(
            tally=tally, expected=self.config.items * len(NODES), failover=self.state.failover,
            catch_up=self.state.caught_up, replicas=statuses, exit_codes=list(codes),
            elapsed=time.monotonic() - self.state.started, error=error, directory=self.dir,
            writes_resumed=resumed,
        )

    async def _run(self, session: aiohttp.ClientSession, ledger: Ledger) -> None:
        for node in self.nodes:
            await node.start()
        for node in self.nodes:
            await node.wait_ready(timeout=25)
        leader = await self._wait_leader(session, timeout=10)
        self.display.event(f"3 nodes up (pids {', '.join(str(n.pid) for n in self.nodes)}); "
                           f"leader is node {leader.node_id}")
        deadline = self.state.started + self.config.timeout
        while True:
            await asyncio.gather(*(n.poll(session) for n in self.nodes))
            tally = ledger.tally()
            self.display.update(tally, self.nodes)
            await self._maybe_kill(tally)
            await self._maybe_restart()
            self._check_caught_up()
            if self._finished(tally):
                self.display.event("every job processed; replicas in sync")
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the demo did not finish within {self.config.timeout:g}s")
            await asyncio.sleep(0.02 if self._failing_over else 0.1)

    @property
    def _failing_over(self) -> bool:
        return self.state.kill_time is not None and self.state.failover is None

    async def _wait_leader(self, session: aiohttp.ClientSession, timeout: float) -> NodeProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await asyncio.gather(*(n.poll(session) for n in self.nodes))
            for node in self.nodes:
                if node.status is not None and node.status["state"] == "leader":
                    return node
            await asyncio.sleep(0.05)
        raise RuntimeError("no leader was elected; see the node logs in " + str(self.dir))

    async def _maybe_kill(self, tally: Tally) -> None:
        s = self.state
        if s.killed is not None:
            if s.failover is None:
                self._check_failover()
            return
        if tally.pushed < self.config.kill_at * self.config.items * len(NODES):
            return
        leader = next((n for n in self.nodes
                       if n.status is not None and n.status["state"] == "leader"), None)
        if leader is None:
            return
        s.old_term = int(leader.status["term"]) if leader.status else 0
        s.kill_time = time.time()
        leader.kill()
        s.killed = leader
        self.display.event(f"SIGKILL leader node {leader.node_id} (pid {leader.pid}, "
                           f"term {s.old_term}) with {tally.pushed} jobs acknowledged")

    def _check_failover(self) -> None:
        s = self.state
        assert s.kill_time is not None
        for node in self.nodes:
            st = node.status
            if node is s.killed or st is None or st["state"] != "leader":
                continue
            lead = st.get("leadership") or {}
            if lead.get("term", 0) > s.old_term and lead.get("first_commit") is not None:
                s.failover = Failover(
                    old_leader=s.killed.node_id if s.killed else 0, new_leader=node.node_id,
                    old_term=s.old_term, new_term=int(lead["term"]),
                    elected=float(lead["became_leader"]) - s.kill_time,
                    first_commit=float(lead["first_commit"]) - s.kill_time,
                )
                self.display.event(
                    f"node {node.node_id} leads term {lead['term']}: first commit "
                    f"{s.failover.first_commit * 1000:.0f} ms after the kill")

    async def _maybe_restart(self) -> None:
        s = self.state
        if s.killed is None or s.restarted or s.failover is None or s.kill_time is None:
            return
        if time.time() - s.kill_time < s.failover.first_commit + self.config.restart_after:
            return
        s.restarted = True
        leader = self._leader_status()
        s.catch_up_target = leader["commit_index"] if leader else 0
        await s.killed.start()
        await s.killed.wait_ready(timeout=25)
        s.restart_time = time.time()
        self.display.event(f"restarted node {s.killed.node_id} (pid {s.killed.pid})")

    def _check_caught_up(self) -> None:
        s = self.state
        if not s.restarted or s.caught_up is not None or s.killed is None:
            return
        mine = s.killed.status
        leader = self._leader_status()
        if mine is None or leader is None:
            return
        if mine["last_applied"] >= s.catch_up_target and mine["leader"] is not None:
            s.caught_up = time.time() - s.restart_time
            self.display.event(f"node {s.killed.node_id} caught up (applied index "
                               f"{mine['last_applied']} >= {s.catch_up_target})")

    def _leader_status(self) -> dict[str, Any] | None:
        return next((n.status for n in self.nodes
                     if n.status is not None and n.status["state"] == "leader"), None)

    def _finished(self, tally: Tally) -> bool:
        if tally.producers_done < len(NODES) or (self.state.killed and not self.state.caught_up):
            return False
        leader = self._leader_status()
        if leader is None:
            return False
        work = leader["work_queues"].get("demo.jobs")
        return work is not None and work["pending"] == 0 and work["in_flight"] == 0

    async def _final_statuses(self, session: aiohttp.ClientSession) -> list[dict[str, Any]]:
        """Every replica's indexes and queue counts once it applied the leader's log."""
        leader = self._leader_status()
        target = leader["commit_index"] if leader else 0
        deadline = time.monotonic() + 5
        while True:
            await asyncio.gather(*(n.poll(session) for n in self.nodes))
            statuses = [n.status for n in self.nodes if n.status is not None]
            if all(s["last_applied"] >= target for s in statuses) or time.monotonic() > deadline:
                return statuses
            await asyncio.sleep(0.05)


def main(config: ClusterDemoConfig, console: Console | None = None) -> int:
    """Run the demo and print the summary; 0 when nothing was lost or duplicated."""
    console = console or Console()
    summary = asyncio.run(ClusterDemo(config, console).run())
    summary.print(console)
    return 0 if summary.ok else 1
