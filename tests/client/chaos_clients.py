"""Chaos on the client path: three ``lazily-queue node`` processes, client processes
producing with ``msg_id``s (a queue, a work queue, a topic) and consuming them (pops,
claim and ack with leases, a durable subscriber), while members are killed, stopped and
their disks filled, and a worker is killed mid-claim.

``python -m tests.client.chaos_clients [SCENARIO...]`` (as root: each member's data
directory is a tmpfs of its own) prints, per scenario, what the clients saw (each
error's type, ``applied`` and message), the longest time each client made no progress,
and at the end what was lost or doubled, checked against every acknowledgement the
clients printed (:mod:`tests.client.chaos_report`); it exits 1 when anything was lost,
doubled or untyped. Every client's events stay in ``events.jsonl`` of the run's
directory (``/tmp/lq-chaos-*``, printed). ``CHAOS_DISK_FULL`` is how long the leader's
disk stays full (seconds, 4 by default). A network partition runs apart, its links
through TCP relays: :mod:`tests.client.chaos_partition`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazily_queue import connect
from tests.cli.node_procs import NodeProc, unix_peers, write_config
from tests.client.chaos_report import report
from tests.tmpfs import fill, mounted_tmpfs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TOKEN = "token-of-the-chaos-clients"
GRANT = "\n".join(["[[client]]", 'name = "app"', 'token_env = "CHAOS_TOKEN"',
                   'produce = ["*"]', 'consume = ["*"]', 'admin = ["*"]'])
#: (role, name, op_timeout, prefer_leader): some clients fail an operation after 2 s,
#: so the errors a client sees are listed, the others after the default 10 s; those not
#: preferring the leader stay with the first member they link to (each client is given
#: the addresses in another order).
ROLES = [("subscribe", "sub1", 10, True), ("push-queue", "pq1", 10, True),
         ("push-queue", "pq2", 2, False), ("push-work", "pw1", 10, True),
         ("push-work", "pw2", 2, False), ("publish", "pt1", 2, True),
         ("pop", "pop1", 10, True), ("pop", "pop2", 2, False), ("work", "w1", 10, True),
         ("work", "w2", 2, False), ("work", "w3", 10, False)]
PROGRESS = {"acked", "popped", "claimed", "settled", "got"}


@dataclass
class Client:
    role: str
    name: str
    proc: asyncio.subprocess.Process
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: bytes = b""
    seen: asyncio.Event = field(default_factory=asyncio.Event)

    def member(self) -> int | None:
        for event in reversed(self.events):
            if event["ev"] == "member":
                return int(event["member"]) if event["member"] else None
        return None

    async def wait(self, ev: str, after: float, timeout: float = 60.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for event in reversed(self.events):
                    if event["t"] < after:
                        break
                    if event["ev"] == ev:
                        found: dict[str, Any] = event
                        return found
                self.seen.clear()
                await self.seen.wait()


class Cluster:
    def __init__(self, root: Path, disks: dict[int, Path]) -> None:
        self.peers = unix_peers(root)
        self.disks = disks
        self.configs = {}
        for i in self.peers:
            config = write_config(root / f"n{i}.toml", i, self.peers,
                                  data_dir=str(disks[i] / "data"), extra=GRANT)
            config.write_text(config.read_text().replace('durability = "none"\n', ""))
            self.configs[i] = config
        self.procs: dict[int, NodeProc] = {}

    async def start(self, *ids: int) -> None:
        for i in ids:
            self.procs[i] = NodeProc(self.configs[i], env={"CHAOS_TOKEN": TOKEN})
        for i in ids:
            await asyncio.to_thread(self.procs[i].wait_ready)

    async def kill(self, *ids: int) -> None:
        for i in ids:
            self.procs[i].proc.kill()
        for i in ids:
            await asyncio.to_thread(self.procs[i].proc.wait)

    def alive(self) -> list[int]:
        return [i for i, p in self.procs.items() if p.proc.poll() is None]

    async def leader(self) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for i in self.alive():
                with contextlib.suppress(Exception):
                    status = await asyncio.to_thread(self.procs[i].status)
                    if status.get("leader"):
                        return int(status["leader"])
            await asyncio.sleep(0.1)
        raise AssertionError("no leader")


async def spawn(role: str, name: str, op_timeout: float, prefer_leader: bool,
                addresses: list[str]) -> Client:
    env = dict(os.environ, CHAOS_TOKEN=TOKEN, CHAOS_OP_TIMEOUT=str(op_timeout),
               CHAOS_PREFER_LEADER="1" if prefer_leader else "0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(HERE / "chaos_client.py"), role, name, *addresses, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    client = Client(role, name, proc)

    async def read() -> None:
        assert proc.stdout is not None and proc.stderr is not None
        async for raw in proc.stdout:
            client.events.append(json.loads(raw))
            client.seen.set()
        client.stderr = await proc.stderr.read()
    client.reader = asyncio.create_task(read())  # type: ignore[attr-defined]
    return client


@dataclass
class Outcome:
    name: str
    start: float
    end: float = 0.0
    notes: list[str] = field(default_factory=list)


class Harness:
    def __init__(self, cluster: Cluster, clients: list[Client]) -> None:
        self.cluster = cluster
        self.clients = clients
        self.outcomes: list[Outcome] = []

    def by_name(self, name: str) -> Client:
        return next(c for c in self.clients if c.name == name)

    async def all_progress(self, after: float, timeout: float = 90.0) -> None:
        """Every live producer and the consumers acknowledge something after ``after``."""
        live = [c for c in self.clients if c.proc.returncode is None]
        try:
            await asyncio.gather(*(c.wait(next(iter(self._progress(c))), after, timeout)
                                   for c in live if c.role != "work"))
        except TimeoutError:
            for c in live:
                if not any(e["ev"] in self._progress(c) and e["t"] > after for e in c.events):
                    print(f"STUCK {c.name} (exit {c.proc.returncode}): {c.events[-5:]}")
                    if c.proc.returncode is not None:
                        await c.reader  # type: ignore[attr-defined]
                        print(c.stderr.decode()[-3000:])
            raise
        workers = [c for c in live if c.role == "work"]
        if workers:
            await asyncio.wait([asyncio.create_task(w.wait("settled", after, timeout))
                                for w in workers], return_when=asyncio.FIRST_COMPLETED)

    @staticmethod
    def _progress(client: Client) -> set[str]:
        return {"push-queue": {"acked"}, "push-work": {"acked"}, "publish": {"acked"},
                "pop": {"popped"}, "work": {"settled"}, "subscribe": {"got"}}[client.role]

    async def scenario(self, name: str, act: Any) -> None:
        outcome = Outcome(name, time.time())
        self.outcomes.append(outcome)
        print(f"--- {name}", flush=True)
        await act(outcome)
        await self.all_progress(time.time())
        outcome.end = time.time()
        await asyncio.sleep(1.0)

    async def restore(self) -> None:
        dead = [i for i in self.cluster.peers if i not in self.cluster.alive()]
        if dead:
            await self.cluster.start(*dead)


async def run(root: Path, chosen: list[str]) -> int:
    with contextlib.ExitStack() as stack:
        disks = {i: stack.enter_context(mounted_tmpfs(root / f"disk{i}", "size=48m"))
                 for i in (1, 2, 3)}
        cluster = Cluster(root, disks)
        await cluster.start(1, 2, 3)
        await cluster.leader()
        addresses = list(cluster.peers.values())
        clients = []
        try:
            for k, (role, name, op_timeout, prefer_leader) in enumerate(ROLES):
                turned = addresses[k % 3:] + addresses[:k % 3]
                clients.append(await spawn(role, name, op_timeout, prefer_leader, turned))
                if role == "subscribe":  # before any publish: it gets every one
                    await clients[-1].wait("subscribed", 0)
            for client in clients:
                await client.wait("ready", 0)
            harness = Harness(cluster, clients)
            await harness.all_progress(0)
            for name, act in scenarios(harness).items():
                if not chosen or name in chosen:
                    await harness.scenario(name, act)
            return await finish(harness, addresses)
        finally:
            for client in clients:
                if client.proc.returncode is None:
                    client.proc.kill()
                await client.proc.wait()
            for proc in cluster.procs.values():
                if proc.proc.poll() is None:
                    os.kill(proc.proc.pid, signal.SIGCONT)
                await asyncio.to_thread(proc.terminate)


def scenarios(h: Harness) -> dict[str, Any]:
    cluster = h.cluster

    async def kill_producers_member(o: Outcome) -> None:
        member = h.by_name("pq2").member()
        o.notes.append(f"killed member {member} (pq2's)")
        assert member is not None
        await cluster.kill(member)
        await asyncio.sleep(2)
        await h.restore()

    async def kill_workers_member_mid_claim(o: Outcome) -> None:
        worker = h.by_name("w1")
        await worker.wait("claimed", time.time())
        member = worker.member()
        assert member is not None
        o.notes.append(f"killed member {member} (w1's) after a claim")
        await cluster.kill(member)
        await asyncio.sleep(2)
        await h.restore()

    async def kill_leader(o: Outcome) -> None:
        leader = await cluster.leader()
        o.notes.append(f"killed leader {leader}")
        await cluster.kill(leader)
        await asyncio.sleep(2)
        await h.restore()

    async def kill_two(o: Outcome) -> None:
        leader = await cluster.leader()
        other = next(i for i in cluster.peers if i != leader)
        o.notes.append(f"killed {leader} (leader) and {other}")
        await cluster.kill(leader, other)
        await asyncio.sleep(3)
        await h.restore()

    async def pause_member(o: Outcome) -> None:
        worker = h.by_name("w2")
        await worker.wait("claimed", time.time())
        member = worker.member()
        assert member is not None
        o.notes.append(f"SIGSTOP member {member} (w2's) for 8 s")
        await asyncio.to_thread(cluster.procs[member].pause)
        await asyncio.sleep(8)
        os.kill(cluster.procs[member].proc.pid, signal.SIGCONT)

    async def pause_leader(o: Outcome) -> None:
        leader = await cluster.leader()
        o.notes.append(f"SIGSTOP leader {leader} for 8 s")
        await asyncio.to_thread(cluster.procs[leader].pause)
        await asyncio.sleep(8)
        os.kill(cluster.procs[leader].proc.pid, signal.SIGCONT)

    async def kill_worker(o: Outcome) -> None:
        worker = h.by_name("w3")
        claimed = await worker.wait("claimed", time.time())
        worker.proc.kill()
        await worker.proc.wait()
        o.notes.append(f"killed worker w3 holding {claimed['id']} (item {claimed['item']})")
        h.killed_item = claimed["item"]  # type: ignore[attr-defined]

    async def disk_full(o: Outcome) -> None:
        leader = await cluster.leader()
        o.notes.append(f"filled leader {leader}'s disk")
        filler = fill(cluster.disks[leader])
        async with connect(list(cluster.peers.values()), ("app", TOKEN), op_timeout=3) as c:
            q = c.queue("filler")
            deadline = time.monotonic() + 60
            while (await asyncio.to_thread(cluster.procs[leader].status))["disk"]["writable"]:
                with contextlib.suppress(Exception):
                    await q.push_many(["x" * 4000] * 16)
                assert time.monotonic() < deadline, "the leader's disk never filled"
        o.notes.append("leader's journal refused writes")
        await asyncio.sleep(float(os.environ.get("CHAOS_DISK_FULL", "4")))
        os.remove(filler)

    async def kill_all(o: Outcome) -> None:
        o.notes.append("kill -9 every member, restart after 1 s")
        await cluster.kill(*cluster.alive())
        await asyncio.sleep(1)
        await h.restore()

    return {"kill-producer-member": kill_producers_member,
            "kill-worker-member-mid-claim": kill_workers_member_mid_claim,
            "kill-leader": kill_leader, "kill-two-members": kill_two,
            "pause-member": pause_member, "pause-leader": pause_leader,
            "kill-worker-mid-claim": kill_worker,
            "leader-disk-full": disk_full, "kill-all-members": kill_all}


async def finish(h: Harness, addresses: list[str]) -> int:
    for client in h.clients:
        if client.role.startswith(("push", "publish")) and client.proc.returncode is None:
            client.proc.send_signal(signal.SIGTERM)
    for client in h.clients:
        if client.role.startswith(("push", "publish")) and client.proc.returncode is None:
            await client.proc.wait()
    acked: dict[str, dict[str, float]] = defaultdict(dict)
    for client in h.clients:
        kind = {"push-queue": "queue", "push-work": "work", "publish": "topic"}.get(client.role)
        for e in client.events:
            if kind and e["ev"] == "acked":
                acked[kind][e["id"]] = e["t"]
    async with connect(addresses, ("app", TOKEN), op_timeout=30) as checker:
        jobs = checker.work_queue("jobs", visibility_timeout=3.0, max_deliveries=100)
        q, topic = checker.queue("q"), checker.topic("t")
        jobs.pending_len(), q.len(), topic.reader("sub1")()
        deadline = time.monotonic() + 60
        while True:
            await checker.barrier()
            got = {e["id"] for e in h.by_name("sub1").events if e["ev"] == "got"}
            state = (jobs.pending_len(), jobs.in_flight_len(), q.len())
            if state == (0, 0, 0) and set(acked["topic"]) <= got:
                break
            if time.monotonic() > deadline:
                print(f"NOT SETTLED: pending, in flight, queued {state}; topic elements "
                      f"missing {len(set(acked['topic']) - got)}; in flight "
                      f"{[(d.item_id, d.worker) for d in jobs.in_flight()][:10]}")
                break
            await asyncio.sleep(0.5)
        dead = jobs.dead_letter_len()
        left = {d.value for d in jobs.pending()} | {d.value for d in jobs.in_flight()}
    if left:
        print(f"{len(left)} jobs still pending or leased (not lost)")
        acked["work"] = {i: t for i, t in acked["work"].items() if i not in left}
    for client in h.clients:
        if client.proc.returncode is None:
            client.proc.send_signal(signal.SIGTERM)
    for client in h.clients:
        await client.proc.wait()
        await client.reader  # type: ignore[attr-defined]
    where = h.cluster.configs[1].parent / "events.jsonl"
    where.write_text("".join(json.dumps({"client": c.name, **e}) + "\n"
                             for c in h.clients for e in c.events))
    print(f"events: {where}")
    return report(h, acked, dead)


def main() -> None:
    import tempfile
    root = Path(tempfile.mkdtemp(prefix="lq-chaos-", dir="/tmp"))
    sys.exit(asyncio.run(run(root, sys.argv[1:])))


if __name__ == "__main__":
    main()
