"""The clients of one run: the declarer, then the scenario's clients by kind (seeded
from the run's generator, in kind order), then those seeded apart by the seed alone (so
adding one leaves the others' draws unchanged); each acts on its own period."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .cancelled_pops import CancellingConsumer
from .client import GROUPS
from .cluster import Cluster
from .doubled_give_backs import DoublingProducer
from .ephemeral_sessions import EphemeralSessionClient
from .expiry import TtlClient
from .forgotten_sessions import ForgettingClient
from .group_expiry import GroupTtlClient
from .headers import HeaderConsumer, HeaderProducer
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
from .session_takes import SessionTaker
from .topic_options import TopicOptionsClient
from .txn import TxnWorker
from .txn_options import TxnOptionsClient
from .work_expiry import WorkTtlClient
from .workload import (
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


def make_clients(s: Scenario, c: Cluster, seeds: random.Random, groups: bool) -> list[Client]:
    """Scenario ``s``'s clients, each scheduled to act on ``c``; ``seeds`` seeds those not
    seeded apart, ``groups`` says whether the topic has consumer groups."""
    clients: list[Client] = []
    declarer = Declarer("de1", c, random.Random(seeds.getrandbits(64)),
                        s.visibility_ms, s.max_deliveries,
                        queue_capacity=s.queue_capacity,
                        groups=groups)
    clients.append(declarer)
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
    for kind, count in sorted(s.clients.items()):
        for i in range(count):
            rng = random.Random(seeds.getrandbits(64))
            if kind in ("durable", "ephemeral"):
                subscriber = Subscriber(f"{kind[0]}{i + 1}", c, rng, kind == "durable")
                subscriber.batching = s.batching
                client: Client = subscriber
            elif kind == "group-member":  # members alternate between the groups
                member = GroupMember(f"gm{i + 1}", c, rng, GROUPS[i % len(GROUPS)])
                member.batching = s.batching
                member.settle_batches = s.settle_batches
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
                    client.large = s.large_values
                if isinstance(client, Worker):
                    client.extend = s.extend_leases
                    client.settle_batches = s.settle_batches
                    client.scheduling = s.scheduling
                if isinstance(client, WorkProducer):
                    client.scheduling = s.scheduling
                if isinstance(client, Worker | Consumer | SessionConsumer):
                    client.batching = s.batching
            clients.append(client)
            c.every(0.05 + rng.uniform(0, 0.05), _period(rng), client.act)
    # Seeded apart (by the seed alone): the other clients' draws are unchanged.
    apart: list[tuple[int, int, int, str, Callable[[str, random.Random, int], Client]]] = [
        (s.ttl_clients, 7907, 101, "tc", lambda cid, r, i: TtlClient(cid, c, r)),
        (s.options_clients, 7919, 211, "oc",
         lambda cid, r, i: OptionsClient(cid, c, r)),
        (s.session_group_members if groups else 0, 7927, 211, "sg",
         lambda cid, r, i: SessionGroupMember(cid, c, r, GROUPS[i % len(GROUPS)])),
        (s.work_ttl_clients, 7933, 307, "wt",
         lambda cid, r, i: WorkTtlClient(cid, c, r)),
        (s.group_ttl_clients, 7937, 311, "gt",
         lambda cid, r, i: GroupTtlClient(cid, c, r)),
        (s.cancelling_consumers, 7949, 401, "cc",
         lambda cid, r, i: CancellingConsumer(cid, c, r)),
        (s.txn_options_clients, 7951, 409, "xo",
         lambda cid, r, i: TxnOptionsClient(cid, c, r, ttl=s.txn_ttl)),
        (s.ephemeral_sessions, 7963, 419, "es",
         lambda cid, r, i: EphemeralSessionClient(cid, c, r)),
        (s.registered_sessions, 7993, 431, "rs",
         lambda cid, r, i: RegisteringClient(cid, c, r)),
        (s.session_givers, 8009, 443, "gv",
         lambda cid, r, i: SessionGiver(cid, c, r, consume_only=i % 2 == 0)),
        (s.session_takers, 8017, 461, "tk", lambda cid, r, i: SessionTaker(cid, c, r)),
        (s.forgetting_clients if s.registered_sessions else 0, 8011, 457, "fs",
         lambda cid, r, i: ForgettingClient(cid, c, r)),
        (s.doubling_producers, 8053, 467, "dp", lambda cid, r, i: DoublingProducer(cid, c, r)),
    ]
    for count, factor, offset, prefix, make in apart:
        for i in range(count):
            rng = random.Random(s.seed * factor + offset + i)
            own = make(f"{prefix}{i + 1}", rng, i)
            clients.append(own)
            c.every(0.05 + rng.uniform(0, 0.05), _period(rng), own.act)
    if s.registered_sessions:  # before any op applies: every replica alike
        c.history.max_client_sessions = session_bound(sum(
            isinstance(cl, SessionClient) and not isinstance(cl, RegisteringClient)
            for cl in clients))
    return clients


def _period(rng: random.Random) -> Callable[[], float]:
    return lambda: rng.uniform(0.01, 0.1)
