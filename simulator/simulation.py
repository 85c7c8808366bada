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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lazily_queue.core.groups import group_queue_name
from lazily_queue.replicated import ops as C

from .cancelled_pops import CancellingConsumer
from .checker import Checker
from .client import GROUPS
from .cluster import MAINTENANCE, Cluster
from .deliveries import check_session_answers, check_single_delivery
from .ephemeral_sessions import EphemeralSessionClient
from .expiry import TtlClient
from .faults import Faults
from .forgotten_sessions import ForgettingClient
from .give_back_checks import check_give_backs
from .given_back import check_given_back
from .group_expiry import GroupTtlClient
from .headers import HeaderConsumer, HeaderProducer
from .history import Violation
from .limits_model import LimitedClient
from .once import OnceProducer
from .queue_options import OptionsClient
from .registered_sessions import RegisteringClient, session_bound
from .replay_time import TimeReplayer
from .scenario import Scenario
from .session_client import (
    SessionClient,
    SessionConsumer,
    SessionGroupMember,
    SessionProducer,
    SessionWorker,
)
from .session_givers import SessionGiver
from .session_takes import SessionTaker, check_takers
from .stats import checked_stats
from .topic_options import TopicOptionsClient
from .txn import TxnWorker
from .txn_options import TxnOptionsClient
from .work_expiry import WorkTtlClient
from .workload import (
    QUEUE,
    TOPIC,
    WORK,
    Client,
    Consumer,
    Declarer,
    GroupMember,
    Producer,
    Publisher,
    Replayer,
    Subscriber,
    Worker,
    WorkProducer,
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
        self._next_drain_check = 0.0

    # -- set-up ---------------------------------------------------------------------------

    def _make_clients(self) -> None:
        c = self.cluster
        declarer = Declarer("de1", c, random.Random(self.rng.getrandbits(64)),
                            self.s.visibility_ms, self.s.max_deliveries,
                            queue_capacity=self.s.queue_capacity,
                            groups=self._groups())
        self.clients.append(declarer)
        c.every(0.01, lambda: 0.05, declarer.act)
        kinds: dict[str, Any] = {
            "producer": Producer, "consumer": Consumer, "work-producer": WorkProducer,
            "worker": Worker, "publisher": Publisher, "session-producer": SessionProducer,
            "once-producer": OnceProducer, "session-consumer": SessionConsumer,
            "session-worker": SessionWorker, "txn-worker": TxnWorker, "replayer": Replayer,
            "time-replayer": TimeReplayer, "header-producer": HeaderProducer,
            "header-consumer": HeaderConsumer, "limited": LimitedClient,
            "topic-options": TopicOptionsClient,
        }
        for kind, count in sorted(self.s.clients.items()):
            for i in range(count):
                rng = random.Random(self.rng.getrandbits(64))
                if kind in ("durable", "ephemeral"):
                    subscriber = Subscriber(f"{kind[0]}{i + 1}", c, rng, kind == "durable")
                    subscriber.batching = self.s.batching
                    client: Client = subscriber
                elif kind == "group-member":  # members alternate between the groups
                    member = GroupMember(f"gm{i + 1}", c, rng, GROUPS[i % len(GROUPS)])
                    member.batching = self.s.batching
                    member.settle_batches = self.s.settle_batches
                    client = member
                else:
                    prefix = {"session-producer": "sp", "once-producer": "op",
                              "session-consumer": "sc", "session-worker": "sw",
                              "txn-worker": "tw", "replayer": "r",
                              "time-replayer": "rt", "header-producer": "hp",
                              "header-consumer": "hc", "limited": "lc",
                              "topic-options": "to"}.get(kind, kind[:2])
                    client = kinds[kind](f"{prefix}{i + 1}", c, rng)
                    if isinstance(client, Producer):
                        client.large = self.s.large_values
                    if isinstance(client, Worker):
                        client.extend = self.s.extend_leases
                        client.settle_batches = self.s.settle_batches
                        client.scheduling = self.s.scheduling
                    if isinstance(client, WorkProducer):
                        client.scheduling = self.s.scheduling
                    if isinstance(client, Worker | Consumer | SessionConsumer):
                        client.batching = self.s.batching
                self.clients.append(client)
                c.every(0.05 + rng.uniform(0, 0.05), _period(rng), client.act)
        # Seeded apart (by the seed alone): the other clients' draws are unchanged.
        apart: list[tuple[int, int, int, str, Callable[[str, random.Random, int], Client]]] = [
            (self.s.ttl_clients, 7907, 101, "tc", lambda cid, r, i: TtlClient(cid, c, r)),
            (self.s.options_clients, 7919, 211, "oc",
             lambda cid, r, i: OptionsClient(cid, c, r)),
            (self.s.session_group_members if self._groups() else 0, 7927, 211, "sg",
             lambda cid, r, i: SessionGroupMember(cid, c, r, GROUPS[i % len(GROUPS)])),
            (self.s.work_ttl_clients, 7933, 307, "wt",
             lambda cid, r, i: WorkTtlClient(cid, c, r)),
            (self.s.group_ttl_clients, 7937, 311, "gt",
             lambda cid, r, i: GroupTtlClient(cid, c, r)),
            (self.s.cancelling_consumers, 7949, 401, "cc",
             lambda cid, r, i: CancellingConsumer(cid, c, r)),
            (self.s.txn_options_clients, 7951, 409, "xo",
             lambda cid, r, i: TxnOptionsClient(cid, c, r, ttl=self.s.txn_ttl)),
            (self.s.ephemeral_sessions, 7963, 419, "es",
             lambda cid, r, i: EphemeralSessionClient(cid, c, r)),
            (self.s.registered_sessions, 7993, 431, "rs",
             lambda cid, r, i: RegisteringClient(cid, c, r)),
            (self.s.session_givers, 8009, 443, "gv",
             lambda cid, r, i: SessionGiver(cid, c, r, consume_only=i % 2 == 0)),
            (self.s.session_takers, 8017, 461, "tk", lambda cid, r, i: SessionTaker(cid, c, r)),
            (self.s.forgetting_clients if self.s.registered_sessions else 0, 8011, 457, "fs",
             lambda cid, r, i: ForgettingClient(cid, c, r)),
        ]
        for count, factor, offset, prefix, make in apart:
            for i in range(count):
                rng = random.Random(self.s.seed * factor + offset + i)
                own = make(f"{prefix}{i + 1}", rng, i)
                self.clients.append(own)
                c.every(0.05 + rng.uniform(0, 0.05), _period(rng), own.act)
        if self.s.registered_sessions:  # before any op applies: every replica alike
            c.history.max_client_sessions = session_bound(sum(
                isinstance(cl, SessionClient) and not isinstance(cl, RegisteringClient)
                for cl in self.clients))

    def _groups(self) -> bool:
        """Whether the topic has consumer groups (the scenario has group members)."""
        return self.s.clients.get("group-member", 0) > 0

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> None:
        c = self.cluster
        for n in c.node_ids:
            c.start_node(n)
        self._make_clients()
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
        self.kept = check_single_delivery(checker.pushes, self.clients)
        self.taken, self.no_room = check_takers(self.clients)
        self.given_back = check_given_back(self.cluster.history, self.clients, self.cluster)
        queue = (self.final_state or {}).get("queues", {}).get(QUEUE)
        self.give_backs = check_give_backs(self.cluster.history, self.clients,
                                           None if queue is None else list(queue[2]))
        checker.check_final(self.final_state)
        checker.check_drained()
        return checker


def _period(rng: random.Random) -> Callable[[], float]:
    return lambda: rng.uniform(0.01, 0.1)


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
