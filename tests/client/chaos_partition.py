"""A network partition among real processes for the client chaos harness: three
``lazily-queue node`` processes linked over TCP through relays this process owns (one
per member and peer, one per client and member: :mod:`tests.client.relays`), client
processes of :mod:`tests.client.chaos_client` producing with ``msg_id``s and consuming.

The leader is cut from the two others for ``CHAOS_PARTITION`` seconds (6 by default,
longer until the clients that must move have gone on elsewhere), with a producer and a
consumer of its clients (:data:`STAYING`: they reach it and nothing else); its other
clients reach the majority only, so they must move; then the links are healed. ``python -m
tests.client.chaos_partition`` prints what :func:`run` measures and the harness's report
(:mod:`tests.client.chaos_report`), exiting 1 on a problem.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazily_queue import connect
from tests.cli.node_procs import NodeProc, write_config
from tests.client.chaos_clients import GRANT, TOKEN, Client, Harness, Outcome, spawn
from tests.client.chaos_report import report
from tests.client.relays import Relay

#: (role, name, op_timeout, prefer_leader), as in :data:`~.chaos_clients.ROLES`.
ROLES = [("push-queue", "pq1", 10, True), ("push-queue", "pq2", 2, True),
         ("push-queue", "pq3", 2, False), ("pop", "pop1", 10, True),
         ("pop", "pop2", 2, False)]
IDS = (1, 2, 3)
#: The clients kept with the cut leader: a producer with a short ``op_timeout`` (told
#: why its writes fail well within the cut) and a consumer; the leader's other clients
#: (``pq1``, and ``pq3`` or ``pop2`` when they started there) must move.
STAYING = ("pop1", "pq2")


@dataclass
class Measures:
    """What one partition showed (times in seconds from the cut)."""

    minority: int = 0
    majority_leader: int | None = None
    elected_after: float | None = None
    stayed: list[str] = field(default_factory=list)
    moved: dict[str, float | None] = field(default_factory=dict)
    stayed_errors: dict[str, list[str]] = field(default_factory=dict)
    caught_up_after: float | None = None
    acked: int = 0
    lost: int = 0
    doubled: int = 0
    problems: int = 0


class RelayedCluster:
    """Three members whose Raft links, and whose clients' links, go through relays."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: dict[int, NodeProc] = {}
        self.peer_relays: dict[tuple[int, int], Relay] = {}
        self.client_relays: dict[tuple[str, int], Relay] = {}
        self.configs: dict[int, Path] = {}

    async def start(self) -> None:
        listen = {i: await _free_port() for i in IDS}
        clients = {i: await _free_port() for i in IDS}
        self.client_ports = clients
        for i in IDS:
            for j in IDS:
                if i != j:
                    relay = self.peer_relays[i, j] = Relay(listen[j])
                    await relay.start()
        for i in IDS:
            peers = {j: (f"tcp://127.0.0.1:{listen[i]}" if j == i
                         else self.peer_relays[i, j].address) for j in IDS}
            extra = f'clients = "tcp://127.0.0.1:{clients[i]}"\n{GRANT}'
            config = write_config(self.root / f"n{i}.toml", i, peers, extra=extra,
                                  data_dir=str(self.root / f"data{i}"))
            self.configs[i] = config
            self.procs[i] = NodeProc(config, env={"CHAOS_TOKEN": TOKEN})
        for i in IDS:
            await asyncio.to_thread(self.procs[i].wait_ready)

    async def addresses_for(self, client: str) -> dict[int, str]:
        """The relayed address of each member for one client."""
        for i in IDS:
            relay = self.client_relays[client, i] = Relay(self.client_ports[i])
            await relay.start()
        return {i: self.client_relays[client, i].address for i in IDS}

    def cut(self, minority: int, stay: list[str]) -> None:
        """Cut ``minority`` from the others, with the clients in ``stay``."""
        for (i, j), relay in self.peer_relays.items():
            if minority in (i, j):
                relay.sever()
        for (client, i), relay in self.client_relays.items():
            if (i == minority) != (client in stay):
                relay.sever()

    def heal(self) -> None:
        for relay in (*self.peer_relays.values(), *self.client_relays.values()):
            relay.heal()

    async def status(self, i: int) -> dict[str, Any] | None:
        with contextlib.suppress(Exception):
            found: dict[str, Any] = await asyncio.to_thread(self.procs[i].status)
            return found
        return None

    async def leader_among(self, ids: list[int], timeout: float) -> int:
        """A member of ``ids`` that one of them says leads, and leads."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i in ids:
                status = await self.status(i)
                if status and status.get("leader") in [str(j) for j in ids] \
                        and status["state"] == "leader" and status["has_quorum"]:
                    return i
            await asyncio.sleep(0.1)
        raise AssertionError(f"no leader among {ids}")

    async def close(self) -> None:
        for proc in self.procs.values():
            await asyncio.to_thread(proc.terminate)
        for relay in (*self.peer_relays.values(), *self.client_relays.values()):
            await relay.close()


async def _free_port() -> int:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port: int = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    return port


def _progress_after(client: Client, after: float) -> float | None:
    kinds = Harness._progress(client)
    return next((e["t"] for e in client.events if e["ev"] in kinds and e["t"] > after), None)


async def run(root: Path, cut_for: float = 6.0) -> Measures:
    """Start the cluster and clients, cut the leader away for ``cut_for`` seconds, heal,
    drain, and measure."""
    cluster = RelayedCluster(root)
    clients: list[Client] = []
    measures = Measures()
    try:
        await cluster.start()
        first = await cluster.leader_among(list(IDS), 60)
        for k, (role, name, op_timeout, prefer) in enumerate(ROLES):
            addresses = await cluster.addresses_for(name)
            order = [addresses[IDS[(k + n) % 3]] for n in range(3)]
            clients.append(await spawn(role, name, op_timeout, prefer, order))
        for client in clients:
            await client.wait("ready", 0)
        harness = Harness(cluster, clients)  # type: ignore[arg-type]
        await harness.all_progress(0)
        minority = measures.minority = await cluster.leader_among(list(IDS), 60)
        on_it = sorted(c.name for c in clients if c.member() == minority)
        measures.stayed = [name for name in on_it if name in STAYING]
        assert measures.stayed == sorted(STAYING), (
            f"the clients that prefer the leader are not all on it: {on_it}")
        outcome = Outcome(f"partition: leader {minority} cut away", time.time())
        harness.outcomes.append(outcome)
        outcome.notes.append(f"first leader {first}; clients staying with it "
                             f"{measures.stayed}, moving {on_it[1::2]}")
        cut_at = time.time()
        cluster.cut(minority, measures.stayed)
        majority = [i for i in IDS if i != minority]
        measures.majority_leader = await cluster.leader_among(majority, 30)
        measures.elected_after = time.time() - cut_at
        await asyncio.sleep(cut_for)
        moving = [c for c in clients if c.name in on_it and c.name not in measures.stayed]
        # still cut: wait for each to go on elsewhere (by its ping_timeout; the bound is
        # a failure's); one that never does is measured as None
        await asyncio.gather(*(c.wait(next(iter(Harness._progress(c))), cut_at, 30)
                               for c in moving), return_exceptions=True)
        for c in clients:
            if c in moving:
                moved = _progress_after(c, cut_at)
                measures.moved[c.name] = None if moved is None else moved - cut_at
            if c.name in measures.stayed:
                measures.stayed_errors[c.name] = sorted(
                    {f"{e['type']}: {e['msg']}" for e in c.events
                     if e["ev"] == "error" and e["t"] > cut_at})
        healed_at = time.time()
        cluster.heal()
        leading = await cluster.status(measures.majority_leader)
        assert leading is not None, "the majority's leader gave no status"
        target = leading["commit_index"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = await cluster.status(minority)
            if status and status["last_applied"] >= target:
                measures.caught_up_after = time.time() - healed_at
                break
            await asyncio.sleep(0.1)
        await harness.all_progress(time.time(), timeout=30)
        outcome.end = time.time()
        await _drain(harness, cluster, clients, measures)
    finally:
        for client in clients:
            if client.proc.returncode is None:
                client.proc.kill()
            await client.proc.wait()
        await cluster.close()
    return measures


async def _drain(harness: Harness, cluster: RelayedCluster, clients: list[Client],
                 measures: Measures) -> None:
    """Stop the producers, let the poppers empty the queue, then count."""
    for client in clients:
        if client.role == "push-queue":
            client.proc.send_signal(signal.SIGTERM)
    for client in clients:
        if client.role == "push-queue":
            await client.proc.wait()
    direct = [f"tcp://127.0.0.1:{cluster.client_ports[i]}" for i in IDS]
    async with connect(direct, ("app", TOKEN), op_timeout=30) as checker:
        q = checker.queue("q")
        q.len()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            await checker.barrier()
            if q.len() == 0:
                break
            await asyncio.sleep(0.2)
    for client in clients:
        if client.proc.returncode is None:
            client.proc.send_signal(signal.SIGTERM)
    for client in clients:
        await client.proc.wait()
        await client.reader  # type: ignore[attr-defined]
    acked: dict[str, dict[str, float]] = defaultdict(dict)
    for client in clients:
        for e in client.events:
            if client.role == "push-queue" and e["ev"] == "acked":
                acked["queue"][e["id"]] = e["t"]
    popped = [e["id"] for c in clients for e in c.events if e["ev"] == "popped"]
    measures.acked = len(acked["queue"])
    measures.lost = len(set(acked["queue"]) - set(popped))
    measures.doubled = len(popped) - len(set(popped))
    measures.problems = report(harness, acked, 0)


def main() -> None:
    import tempfile
    root = Path(tempfile.mkdtemp(prefix="lq-partition-", dir="/tmp"))
    measures = asyncio.run(run(root, float(os.environ.get("CHAOS_PARTITION", "6"))))
    print(measures)
    sys.exit(1 if measures.problems or measures.lost or measures.doubled else 0)


if __name__ == "__main__":
    main()
