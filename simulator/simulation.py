"""One seeded run: build the cluster, run the workload under the fault schedule, heal,
drain, converge and check. :func:`run` returns a :class:`Outcome`; it never raises
for a property violation (that is the outcome), only for bugs in the simulator.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from lazily_queue.core.groups import group_queue_name
from lazily_queue.replicated import ops as C

from .checker import Checker
from .client import GROUPS
from .cluster import MAINTENANCE, Cluster
from .deliveries import check_session_answers, check_single_delivery
from .doubled_give_backs import check_doubles, check_records, record_views
from .faults import Faults
from .give_back_checks import check_give_backs
from .given_back import check_given_back
from .history import Violation
from .roster import make_clients
from .scenario import Scenario
from .session_takes import check_takers
from .stats import checked_stats
from .workload import (
    QUEUE,
    TOPIC,
    WORK,
    Client,
    Subscriber,
)

HASH_SEED_HELP = (
    "the simulator must run with PYTHONHASHSEED=0: PySyncObj iterates sets of node "
    "objects, whose order follows string hashing, so the same seed would not give the "
    "same run. Run `PYTHONHASHSEED=0 python -m simulator ...` (or `make sim`)."
)


def require_hash_seed() -> None:
    """Refuse to run unless string hashing is fixed (``PYTHONHASHSEED=0``)."""
    if os.environ.get("PYTHONHASHSEED") != "0" or sys.flags.hash_randomization:
        raise RuntimeError(HASH_SEED_HELP)


@dataclass
class Outcome:
    """How a run ended."""

    seed: int
    ok: bool
    error: str = ""
    trace_digest: str = ""
    trace_tail: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


class Simulation:
    """A cluster, its clients and its fault schedule for one scenario."""

    def __init__(self, scenario: Scenario) -> None:
        require_hash_seed()
        self.s = scenario
        self.cluster = Cluster(scenario)
        self.rng = random.Random(self.cluster.rng.getrandbits(64))
        self.clients: list[Client] = []
        self.faults = Faults(self.cluster, self.rng)
        self.session_answers = 0
        self.kept = 0
        self.given_back = 0
        #: What :func:`~.session_takes.check_takers` checked: elements, takes answered
        #: ``no_room``.
        self.taken = self.no_room = 0
        #: What :func:`~.give_back_checks.check_give_backs` checked.
        self.give_backs: dict[str, int] = {}
        #: What :func:`~.doubled_give_backs.check_doubles` saw.
        self.doubles: dict[str, int] = {}
        self._next_drain_check = 0.0

    # -- set-up ---------------------------------------------------------------------------

    def _groups(self) -> bool:
        """Whether the topic has consumer groups (the scenario has group members)."""
        return self.s.clients.get("group-member", 0) > 0

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> None:
        c = self.cluster
        for n in c.node_ids:
            c.start_node(n)
        self.clients.extend(make_clients(self.s, c, self.rng, self._groups()))
        c.every(MAINTENANCE, lambda: MAINTENANCE, lambda: c.maintain(False))
        c.every(1.0, lambda: 1.0, lambda: c.maintain(True))
        self.faults.schedule(self.s.faults)
        c.run_until(self.s.load_until)
        self._stop_faults()
        for client in self.clients:
            client.draining = True
        drained = c.run_until(self.s.load_until + self.s.drain_limit, self._drained)
        if not drained:
            raise Violation(f"no progress: the workload did not drain within "
                            f"{self.s.drain_limit}s after the faults stopped ({self._status()})")
        self._converge()

    def _stop_faults(self) -> None:
        c = self.cluster
        self.faults.stopped = True
        c.trace("faults stop: heal, resume and restart everything")
        c.network.faults = type(c.network.faults)(latency=c.network.faults.latency)
        c.network.heal()
        for n in c.node_ids:
            if c.is_paused(n):
                c.resume(n)
            self.faults.restart(n, {})

    def _drained(self) -> bool:
        c = self.cluster
        if c.clock.now < self._next_drain_check:
            return False
        self._next_drain_check = c.clock.now + 0.02
        if not self._drained_but_polls():
            self._quiet(False)
            return False
        leader = c.leader()
        replica = None if leader is None else c.nodes[leader].replica
        if replica is None or replica.pending:
            # Settled consumers keep polling the empty cells; with many of them some
            # poll is always in flight. They pause until the last answers are in.
            self._quiet(True)
            return False
        return True

    def _quiet(self, on: bool) -> None:
        for cl in self.clients:
            cl.quiet = on

    def _drained_but_polls(self) -> bool:
        """Every client settled and every cell drained, on a leader of a settled term
        (the leader may still have proposals in flight)."""
        c = self.cluster
        leader = c.leader()
        if leader is None or self.faults.membership.state != "idle":
            return False
        replica, view = c.nodes[leader].replica, c.nodes[leader].view
        assert replica is not None and view is not None
        if not all(cl.settled for cl in self.clients):
            return False
        # Entries of earlier terms (a push whose outcome its client never learned) are
        # known committed, and so visible below, once an entry of this term has committed.
        engine = replica.engine
        if replica.journal.term_at(engine.commit_index) != engine.term or (
                engine.last_applied < engine.commit_index):
            return False
        q = view.queue(QUEUE)
        w = view.work_queue(WORK)
        t = view.topic(TOPIC)
        if q is None or w is None or t is None or q.len() or q.delayed_len():
            return False
        if w.core.pending_len() or w.core.in_flight_len() or w.core.delayed_len():
            return False
        for group in GROUPS if self._groups() else ():
            g = view.work_queue(group_queue_name(TOPIC, group))
            if g is None or g.core.pending_len() or g.core.in_flight_len():
                return False
        for cl in self.clients:
            if isinstance(cl, Subscriber) and cl.durable:
                sub = t.subscription(cl.cid)
                if sub is None or sub["cursor"] < t.end_offset():
                    return False
        return True

    def _drain_status(self) -> str:
        leader = self.cluster.leader()
        node = None if leader is None else self.cluster.nodes[leader]
        if node is None or node.replica is None or node.view is None:
            return "no leader"
        view = node.view
        q, w, t = view.queue(QUEUE), view.work_queue(WORK), view.topic(TOPIC)
        busy = [cl.cid for cl in self.clients if not cl.settled]
        groups = [view.work_queue(group_queue_name(TOPIC, g)) for g in GROUPS]
        return (f"busy {busy}, queue {q and q.len()}, work {w and w.core!r}, "
                f"groups {[g and g.core for g in groups]}, "
                f"topic {t and t.subscriptions()}, end {t and t.end_offset()}")

    def _converge(self) -> None:
        c = self.cluster
        for client in self.clients:
            client.stopped = True
        leader = c.leader()
        assert leader is not None
        c.propose_detached(leader, C.BARRIER, [])
        target = 0

        def converged() -> bool:
            nonlocal target
            replica = c.nodes[leader].replica
            if replica is None:
                return False
            target = replica.engine.commit_index
            return all(
                node.replica is not None and node.replica.engine.last_applied >= target
                and node.replica.pending == 0
                for node in c.nodes.values()
            )

        if not c.run_until(c.clock.now + 20.0, converged):
            raise Violation(f"replicas did not converge after the drain ({self._status()})")
        for n, node in c.nodes.items():
            if node.snapshot_counts()[3]:
                raise Violation(f"replica {n} could not capture its state for a snapshot "
                                "(its log grows until one succeeds; see the log)")
        states = {}
        for n, node in c.nodes.items():
            assert node.replica is not None and node.view is not None
            states[n] = node.view.capture()
        first = states[c.node_ids[0]]
        for n, state in states.items():
            if state != first:
                diff = sorted(k for k in state if state.get(k) != first.get(k))
                raise Violation(f"replica {n} differs from replica {c.node_ids[0]} after "
                                f"convergence in {diff}")
        check_records({n: record_views(node.view, states[n]) for n, node in c.nodes.items()
                       if node.view is not None})
        self.final_state = first

    def _status(self) -> str:
        parts = [self._drain_status()]
        for n, node in self.cluster.nodes.items():
            r = node.replica
            if r is None:
                parts.append(f"{n}:down")
                continue
            e = r.engine
            parts.append(f"{n}:{'FCL'[e.state]}"
                         f" t{e.term} c{e.commit_index} a{e.last_applied} "
                         f"l{r.journal.last_index} p{r.pending}")
        return ", ".join(parts)

    def check(self) -> Checker:
        checker = Checker(self.cluster.history, self.clients)
        checker.replay()
        checker.check_clients()
        self.session_answers = check_session_answers(self.cluster.history, self.clients)
        self.doubles = check_doubles(self.cluster.history, self.clients)
        self.kept = check_single_delivery(checker.pushes, self.clients)
        self.taken, self.no_room = check_takers(self.clients)
        self.given_back = check_given_back(self.cluster.history, self.clients, self.cluster)
        queue = (self.final_state or {}).get("queues", {}).get(QUEUE)
        self.give_backs = check_give_backs(self.cluster.history, self.clients,
                                           None if queue is None else list(queue[2]))
        checker.check_final(self.final_state)
        checker.check_drained()
        return checker


def run(scenario: Scenario) -> Outcome:
    """Run one scenario to its end and check it."""
    logging.getLogger("lazily_queue").setLevel(logging.CRITICAL + 1)
    logging.getLogger("pysyncobj").setLevel(logging.CRITICAL + 1)
    started = time.perf_counter()
    sim = Simulation(scenario)
    outcome = Outcome(scenario.seed, ok=True)
    try:
        sim.run()
        checker = sim.check()
        outcome.stats.update(checked_stats(sim, checker))
    except Violation as exc:
        outcome.ok = False
        outcome.error = str(exc)
    c = sim.cluster
    outcome.trace_digest = c.digest()
    outcome.trace_tail = list(c.trace_tail)
    outcome.stats.update(
        applied=c.history.applied, steps=c.steps, frames=c.network.sent,
        dropped=c.network.dropped, wipes=sum(n.wipes for n in c.nodes.values()),
        virtual=round(c.clock.now, 3), leaders=len(c.leaders),
        snapshots=sum(n.snapshot_counts()[1] for n in c.nodes.values()),
        stale_snapshots=sum(n.snapshot_counts()[2] for n in c.nodes.values()),
        stalls=sum(n.stalls for n in c.nodes.values()),
        failed_writes=sum(n.disk.failed_writes for n in c.nodes.values()),
        bad_frames=c.bad_frames,
        damage=sum(n.corruptions_detected for n in c.nodes.values()),
        inline_fsyncs=sum(n.inline_fsyncs for n in c.nodes.values()),
        worker_fsyncs=sum(n.worker_fsyncs for n in c.nodes.values()),
        one_member=int(len(c.nodes) == 1),
        light_ticks=sum(n.replica.engine.light_ticks for n in c.nodes.values()
                        if n.replica is not None),
    )
    outcome.seconds = time.perf_counter() - started
    return outcome
