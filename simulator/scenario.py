"""A run's parameters and fault schedule, all derived from its seed (or read from a fixture).

The schedule is plain data, so a failing run can be saved as a fixture and replayed:
``{"seed": s, "faults": [...], ...}``. Fault kinds (``at`` is virtual seconds):

- ``crash`` ``node`` (an id or ``"leader"``), restarted after ``down`` seconds;
- ``pause`` ``node`` for ``down`` seconds (SIGSTOP: state kept, input held);
- ``partition`` into ``groups`` (``"leader"`` alone against the rest when ``isolate``),
  healed after ``down`` seconds; ``one_way`` ``src`` → ``dst`` likewise;
- ``corrupt`` ``node``: crash it, flip a bit in (``flip``) or remove the end of
  (``hole``) one durable journal record chosen by ``pick`` (0..1 along the file, not
  the last), flip a bit of the last record (``last``), of its snapshot (``snapshot``)
  or of one of its two metadata copies (``meta``), restart after ``down``;
- ``disk_full`` ``node`` for ``down`` seconds (appends write part of their data and
  fail with ENOSPC, replacements and fsyncs fail); ``fsync_error`` ``node``: its next
  ``count`` fsyncs fail with EIO (and may drop the unsynced bytes);
- ``hostile`` ``src`` → ``dst``: one malformed or malicious frame (see ``hostile.py``);
- ``clock`` ``node``: jump its wall clock by ``seconds``;
- ``transfer``: the leader hands leadership to its most caught-up follower;
- ``reconfigure``: a follower chosen by ``pick`` is removed from the cluster, loses
  its data and is added back empty after ``down`` seconds;
- ``power``: every member crashes at once (all unsynced writes lost), restarted after
  ``down``; a ``crash`` or ``partition`` with ``then_crash`` also crashes that member
  (``"isolated"``: the leader the partition isolated) ``after`` seconds after the heal
  or restart, or with ``in_fsync`` right after it next writes records, before their
  fsync completes.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from lazily_queue.raft.engine import EngineConfig
from lazily_queue.raft.fsync import INLINE_BELOW
from lazily_queue.raft.proposals import ReplicaConfig

from .network import LinkFaults


@dataclass
class Scenario:
    """Everything that defines one simulated run."""

    seed: int
    nodes: int = 3
    load_until: float = 5.0
    drain_limit: float = 40.0
    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    stale: float = 0.0
    latency: tuple[float, float] = (0.001, 0.004)
    fsync_latency: tuple[float, float] = (0.0005, 0.004)
    compaction_entries: int = 200
    compaction_time: float = 5.0
    snapshot_chunk: int = 4096
    visibility_ms: int = 800
    max_deliveries: int = 3
    large_values: float = 0.0
    extend_leases: float = 0.0
    #: The queue's capacity (``None``: unbounded); producers retry a refused push.
    queue_capacity: int | None = None
    #: The share of pops, claims and topic reads made in batches (prefetching consumers).
    batching: float = 0.0
    #: The share of a worker's acks of a batch settled together in one operation.
    settle_batches: float = 0.0
    #: The share of work pushes with a priority and a delay, and of nacks with a delay.
    scheduling: float = 0.0
    #: Members fsync inline while their last fsync took less than this (seconds; 0:
    #: always on the worker thread; see ``simulator/node.py``).
    inline_fsync_below: float = 0.0
    #: Clients of the TTL queue (:mod:`.expiry`), seeded apart from the others (one in a
    #: generated scenario; a stored one without the field replays as it was recorded).
    ttl_clients: int = 0
    #: Clients of the options queue (:mod:`.queue_options`), seeded apart likewise.
    options_clients: int = 0
    #: Consumer-group members that are cluster clients (:class:`~.session_client.
    #: SessionGroupMember`), seeded apart likewise; only where the topic has groups.
    session_group_members: int = 0
    #: Clients of the work queue with TTL items (:mod:`.work_expiry`), seeded apart likewise.
    work_ttl_clients: int = 0
    #: Clients of the topic with expiry and its group (:mod:`.group_expiry`), likewise.
    group_ttl_clients: int = 0
    #: Consumers popping through ``Driver.call`` and cancelled at bad times
    #: (:mod:`.cancelled_pops`), seeded apart likewise.
    cancelling_consumers: int = 0
    #: Clients of the bounded queue with transactions of pushes with options
    #: (:mod:`.txn_options`), seeded apart likewise.
    txn_options_clients: int = 0
    #: Whether those clients push with a ``ttl_ms`` now and then (scenarios saved before
    #: they could replay as they were).
    txn_ttl: bool = False
    #: Cluster clients owning ephemeral subscriptions that end their session or crash
    #: (:mod:`.ephemeral_sessions`), seeded apart likewise.
    ephemeral_sessions: int = 0
    #: Cluster clients registering their sessions, with few client sessions kept so theirs
    #: are given up while their retries are on the way (:mod:`.registered_sessions`),
    #: seeded apart likewise.
    registered_sessions: int = 0
    #: Cluster clients prefetching batches, handing out part and giving the rest back,
    #: every other one without the produce permission (:mod:`.session_givers`), seeded
    #: apart likewise.
    session_givers: int = 0
    #: Cluster clients with several ops in flight whose registered sessions are given
    #: up for the bound, as the registering ones' are (:mod:`.forgotten_sessions`), seeded
    #: apart likewise.
    forgetting_clients: int = 0
    #: Cluster clients taking large elements several takes at once under one session,
    #: past what it keeps (:mod:`.session_takes`), seeded apart likewise.
    session_takers: int = 0
    #: Cluster clients giving one popped element back twice, as a client with the produce
    #: permission may (:mod:`.doubled_give_backs`), seeded apart likewise.
    doubling_producers: int = 0
    clients: dict[str, int] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)

    def link_faults(self) -> LinkFaults:
        return LinkFaults(self.drop, self.duplicate, self.reorder, self.stale,
                          tuple(self.latency))  # type: ignore[arg-type]

    def replica_config(self) -> ReplicaConfig:
        return ReplicaConfig(
            engine=EngineConfig(
                compaction_min_entries=self.compaction_entries,
                compaction_min_time=self.compaction_time,
                snapshot_chunk_bytes=self.snapshot_chunk,
            )
        )

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["latency"] = list(self.latency)
        doc["fsync_latency"] = list(self.fsync_latency)
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Scenario:
        doc = dict(doc)
        doc["latency"] = tuple(doc.get("latency", (0.001, 0.004)))
        doc["fsync_latency"] = tuple(doc.get("fsync_latency", (0.0005, 0.004)))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in doc.items() if k in known})


DEFAULT_CLIENTS = {
    "producer": 2, "consumer": 1, "work-producer": 1, "worker": 2,
    "publisher": 1, "durable": 2, "ephemeral": 1, "session-producer": 2, "once-producer": 2,
    "session-consumer": 1, "session-worker": 1, "txn-worker": 2, "group-member": 3,
    "replayer": 1, "time-replayer": 1, "header-producer": 1, "header-consumer": 1,
    "limited": 1, "topic-options": 2,
}


#: The share of seeds run by one member alone (the embedded default: a leader with no
#: follower, see :mod:`lazily_queue.raft.leading`).
ONE_MEMBER = 0.15
#: The share of seeds with a producer giving elements back twice (:mod:`.doubled_give_backs`).
DOUBLING = 0.5
#: The faults a member alone can meet: none needs a second member, and none damages a
#: durable record (a lone member holds the only copy; nothing can repair it).
LONE_FAULTS = {"crash": 4, "pause": 2, "clock": 2, "power": 1, "disk_full": 2,
               "fsync_error": 1}


def generate(seed: int) -> Scenario:
    """The scenario of ``seed``: cluster size, link faults, timings and fault schedule."""
    rng = random.Random(seed * 7919 + 17)
    s = Scenario(seed)
    s.ttl_clients = 1
    s.options_clients = 1
    s.session_group_members = 1
    s.work_ttl_clients = 1
    s.group_ttl_clients = 1
    s.cancelling_consumers = 1
    s.txn_options_clients = 1
    s.txn_ttl = True
    s.ephemeral_sessions = 2
    s.registered_sessions = 2
    s.session_givers = 2
    s.forgetting_clients = 1
    s.session_takers = 1
    s.nodes = 5 if rng.random() < 0.25 else 3
    s.load_until = rng.uniform(1.5, 3.5)
    s.drop = rng.choice([0.0, 0.0, 0.01, 0.05])
    s.duplicate = rng.choice([0.0, 0.0, 0.02, 0.1])
    s.reorder = rng.choice([0.0, 0.0, 0.05])
    s.stale = rng.choice([0.0, 0.0, 0.2])
    lo = rng.choice([0.0005, 0.002])
    s.latency = (lo, lo * rng.choice([2, 5, 20]))
    s.fsync_latency = (0.0002, rng.choice([0.001, 0.005, 0.02]))
    s.compaction_entries = rng.choice([20, 60, 200, 4000])
    s.compaction_time = rng.choice([1.0, 3.0, 60.0])
    s.snapshot_chunk = rng.choice([512, 4096, 48 * 1024])
    s.visibility_ms = rng.choice([300, 800, 2000])
    s.max_deliveries = rng.choice([1, 2, 3, 5])
    s.large_values = rng.choice([0.0, 0.0, 0.02, 0.1])
    s.extend_leases = rng.choice([0.0, 0.3])
    s.clients = dict(DEFAULT_CLIENTS)
    s.faults = _schedule(rng, s)
    s.queue_capacity = rng.choice([None, None, 2, 8, 50])
    s.batching = rng.choice([0.0, 0.3, 0.8])
    s.inline_fsync_below = rng.choice([0.0, INLINE_BELOW, 1.0])  # never, as the driver, always
    # Drawn last, so a seed's earlier choices (and the saved fixtures) stay as they were.
    s.settle_batches = rng.choice([0.0, 0.5]) if s.batching else 0.0
    s.scheduling = rng.choice([0.0, 0.0, 0.5])
    if rng.random() < ONE_MEMBER:  # drawn after the rest: the other seeds stay as they were
        s.nodes = 1
        s.faults = _schedule(rng, s)
    # Drawn apart: the other draws of every seed stay as they were.
    s.doubling_producers = int(random.Random(seed * 8059 + 3).random() < DOUBLING)
    return s


def _schedule(rng: random.Random, s: Scenario) -> list[dict[str, Any]]:
    ids = [str(i + 1) for i in range(s.nodes)]
    kinds, weights = (
        (["crash", "pause", "partition", "one_way", "corrupt", "clock", "power", "transfer",
          "reconfigure", "disk_full", "fsync_error", "hostile"],
         [4, 2, 4, 2, 2, 2, 1, 1, 1, 2, 1, 1])
        if s.nodes > 1 else (list(LONE_FAULTS), list(LONE_FAULTS.values())))
    faults: list[dict[str, Any]] = []
    t = rng.uniform(0.3, 1.0)
    intensity = rng.choice([0.3, 0.6, 1.2])
    corrupt_free_at = 0.0
    while t < s.load_until:
        node = rng.choice([*ids, "leader", "leader"])
        down = rng.uniform(0.1, 2.0)
        kind = rng.choices(kinds, weights=weights)[0]
        fault: dict[str, Any] = {"at": round(t, 4), "fault": kind}
        if kind in ("crash", "pause", "disk_full"):
            fault.update(node=node, down=round(down, 4))
        elif kind == "fsync_error":
            fault.update(node=node, count=rng.randrange(1, 4))
        elif kind == "hostile":
            src, dst = rng.sample([*ids, "leader"], 2)
            fault.update(src=src, dst=dst)
        elif kind == "power":
            fault.update(down=round(down, 4))
        elif kind == "partition":
            if rng.random() < 0.4:
                fault.update(isolate="leader", down=round(down, 4))
            else:
                shuffled = ids[:]
                rng.shuffle(shuffled)
                cut = rng.randrange(1, len(ids))
                fault.update(groups=[sorted(shuffled[:cut]), sorted(shuffled[cut:])],
                             down=round(down, 4))
        elif kind == "one_way":
            src, dst = rng.sample([*ids, "leader"], 2)
            fault.update(src=src, dst=dst, down=round(down, 4))
        elif kind == "corrupt":
            if t < corrupt_free_at:
                t += rng.expovariate(intensity)
                continue
            corrupt_free_at = t + down + 1.5
            fault.update(node=node, how=rng.choice(["flip", "flip", "hole", "snapshot", "last",
                                                    "meta"]),
                         pick=round(rng.random(), 4), down=round(down, 4))
        elif kind == "reconfigure":
            fault.update(pick=round(rng.random(), 4), down=round(down, 4))
        elif kind == "clock":
            fault.update(node=node, seconds=round(rng.choice([-3.0, -0.5, 0.5, 5.0, 30.0]), 3))
        if "isolate" in fault and rng.random() < 0.5:
            # The isolated leader takes the new leader's entries over its own on heal.
            fault.update(then_crash="isolated", after=0.0, in_fsync=True)
        elif kind in ("crash", "partition") and rng.random() < 0.4:
            fault.update(then_crash=rng.choice(ids), after=round(rng.uniform(0.0, 0.03), 4))
            if rng.random() < 0.5:
                fault.update(in_fsync=True)
        faults.append(fault)
        t += rng.expovariate(intensity)
    return faults
