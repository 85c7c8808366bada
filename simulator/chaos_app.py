"""The workload of the multi-process chaos test, run inside a real node process.

``[app] entry = "simulator.chaos_app:main"`` in a node's configuration runs the
simulator's clients against this node's replica and writes a ledger (see
:mod:`simulator.ledger`): every batch the node applies and every operation its
clients issue, with its outcome. Options: ``ledger`` (path), ``stop_file`` (when it
exists the clients drain and the app writes ``<ledger>.drained``), ``incarnation``,
``visibility_ms``, ``max_deliveries`` and ``seed``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lazily_queue.node import Node
from lazily_queue.raft.proposals import Proposal

from .ledger import LedgerWriter, encode_result
from .workload import (
    QUEUE,
    WORK,
    Client,
    Consumer,
    Declarer,
    Observed,
    Producer,
    Publisher,
    Subscriber,
    Worker,
    WorkProducer,
)


class ProcessHost:
    """The :class:`~simulator.client.Host` of clients living in a node process."""

    def __init__(self, node: Node, ledger: LedgerWriter) -> None:
        self.node = node
        self.ledger = ledger
        self.loop = asyncio.get_running_loop()

    def member_ids(self) -> list[str]:
        return [self.node.node_id]

    def running(self, n: str) -> bool:
        return self.node.running

    def is_paused(self, n: str) -> bool:
        return False

    def now(self) -> float:
        return self.loop.time()

    def session_of(self, n: str) -> int:
        return self.node.driver.replica.session

    def propose(self, client: Client, n: str, code: int, args: list[Any], *, timeout: float,
                on_done: Callable[[Any, BaseException | None], None],
                on_orphan: Callable[[Any], None] | None) -> Proposal | None:
        if not self.node.running:
            return None
        driver = self.node.driver
        p = driver.replica.propose(code, args, timeout=timeout, on_done=on_done,
                                   on_orphan=on_orphan)
        driver.wake()
        return p

    def track(self, n: str, client: Client, obs: Observed, p: Proposal) -> None:
        self.ledger.write("issue", client.cid, obs.node, obs.session, obs.seq, obs.code,
                          obs.args, obs.polling)

    def observed(self, obs: Observed) -> None:
        if obs.has_orphan_result:
            self.ledger.write("late", obs.session, obs.seq, encode_result(obs.orphan_result))
        else:
            self.ledger.write("outcome", obs.session, obs.seq, obs.outcome,
                              encode_result(obs.result))

    def propose_detached(self, n: str, code: int, args: list[Any],
                         timeout: float = 3600.0) -> None:
        if self.node.running:
            self.node.driver.replica.propose(code, args, timeout=timeout,
                                             on_done=lambda _r, _e: None,
                                             on_orphan=lambda _r: None)
            self.node.driver.wake()

    def resubmit_later(self, n: str, obs: Observed) -> None:
        """Same-sequence resubmission is exercised by the simulator only."""


def _record_applies(node: Node, ledger: LedgerWriter) -> None:
    engine = node.driver.replica.engine
    apply = engine._apply_fn

    def recorded(payload: bytes, stamp: int) -> Any:
        index = engine.last_applied + 1
        result = apply(payload, stamp)
        ledger.write("apply", node.node_id, index, payload, stamp, encode_result(result))
        return result

    engine._apply_fn = recorded


def _clients(host: ProcessHost, tag: str, rng: random.Random, options: dict[str, Any]
             ) -> list[Client]:
    def sub(cid: str, durable: bool) -> Client:
        return Subscriber(cid, host, random.Random(rng.random()), durable)

    made: list[Client] = [
        Declarer(f"de{tag}", host, random.Random(rng.random()),
                 int(options.get("visibility_ms", 1500)), int(options.get("max_deliveries", 3))),
        Producer(f"pr{tag}", host, random.Random(rng.random())),
        Consumer(f"co{tag}", host, random.Random(rng.random())),
        WorkProducer(f"wp{tag}", host, random.Random(rng.random())),
        Worker(f"wo{tag}", host, random.Random(rng.random())),
        Publisher(f"pu{tag}", host, random.Random(rng.random())),
        sub(f"d{tag}", True),
        sub(f"e{tag}", False),
    ]
    batching = float(options.get("batching", 0.3))
    for client in made:
        if isinstance(client, Consumer | Worker | Subscriber):
            client.batching = batching
    return made


def _drained(node: Node, clients: list[Client]) -> bool:
    q, w = node.view.queue(QUEUE), node.view.work_queue(WORK)
    if q is None or w is None or q.len() or w.core.pending_len() or w.core.in_flight_len():
        return False
    return all(c.settled for c in clients)


async def main(node: Node, options: dict[str, Any]) -> None:
    ledger_path = Path(options["ledger"])
    stop_file = Path(options["stop_file"])
    incarnation = int(options.get("incarnation", 1))
    ledger = LedgerWriter(ledger_path.with_name(f"{ledger_path.name}.{incarnation}"))
    _record_applies(node, ledger)
    host = ProcessHost(node, ledger)
    rng = random.Random(f"{options.get('seed', 0)}/{node.node_id}/{incarnation}")
    clients = _clients(host, f"{node.node_id}i{incarnation}", rng, options)
    drained_marker = ledger_path.with_name(f"{ledger_path.name}.drained")
    while True:
        await asyncio.sleep(rng.uniform(0.005, 0.03))
        stopping = stop_file.exists()  # noqa: ASYNC240
        for client in clients:
            client.draining = stopping
            client.act()
        if stopping and _drained(node, clients):
            drained_marker.touch()
        if not node.running:
            return
