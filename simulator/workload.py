"""Clients of the simulated cluster: producers, consumers, workers and subscribers.

Each client talks to one member at a time (another one when its member is down) and
has at most one operation outstanding. Every operation it issued is kept as an
:class:`Observed` record with what the client saw: a result, a clean failure (the
operation was certainly not applied) or an unknown outcome (timed out, or its member
crashed). The checker compares these records with the committed history.
"""

from __future__ import annotations

import random
from typing import Any

from lazily_queue.core import ids
from lazily_queue.core.groups import group_queue_name
from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C

from .client import (
    FAILED,
    OK,
    QUEUE,
    TOPIC,
    UNKNOWN,
    WORK,
    Client,
    Declarer,
    Host,
    Observed,
    UniqueSender,
)
from .topic_clients import Publisher, Replayer, Subscriber

__all__ = [
    "FAILED",
    "OK",
    "QUEUE",
    "TOPIC",
    "UNKNOWN",
    "WORK",
    "Client",
    "Consumer",
    "Declarer",
    "GroupMember",
    "Host",
    "Observed",
    "Producer",
    "Publisher",
    "Replayer",
    "Subscriber",
    "UniqueSender",
    "WorkProducer",
    "Worker",
]


class Producer(Client):
    """Pushes unique values to the queue; after an unknown outcome it may push again."""

    kind = "producer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.n = 0
        self.retry: Any = None
        #: The share of pushes carrying a large value (several KiB: batches split).
        self.large = 0.0

    def next_op(self) -> None:
        if self.draining:
            self.stopped = True
            return
        value = self.retry
        if value is None:
            self.n += 1
            value = f"{self.cid}:{self.n}"
            if self.large and self.rng.random() < self.large:
                value += ":" + "x" * self.rng.randrange(1024, 30 * 1024)
        self.retry = None
        obs = self.call(C.QUEUE_PUSH, [QUEUE, value], self._done)
        if obs is not None and self.rng.random() < 0.1:
            self.cluster.resubmit_later(self.node, obs)

    def _done(self, obs: Observed) -> None:
        if obs.outcome == UNKNOWN and self.rng.random() < 0.5:
            self.retry = obs.args[1]
        elif obs.outcome == OK and obs.result == QueuePushError.Full:
            self.retry = obs.args[1]  # the bounded queue refused it: try again later


class Consumer(Client):
    """Pops one element at a time, or (a share ``batching`` of its pops) up to eight at
    once like a prefetching iterator that may stop early and put the rest back under
    their message ids; a pop whose waiter gave up returns what it took. Half the single
    pops are the older ``QUEUE_POP`` (given back under new ids), the rest and every
    batch are stamped (``QUEUE_POP_STAMPED``: ids and enqueue stamps)."""

    kind = "consumer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.batching = 0.0
        self.give_back: tuple[list[Any], list[Any]] | None = None
        self.single_pops = 0

    def next_op(self) -> None:
        if self.give_back is not None:
            (values, runs), self.give_back = self.give_back, None
            self.call(C.QUEUE_UNPOP_STAMPED, [QUEUE, values, runs], self._gave_back)
            return
        timeout = self.rng.uniform(0.5, 3.0)
        if self.batching and self.rng.random() < self.batching:
            self.call(C.QUEUE_POP_STAMPED, [QUEUE, self.rng.randrange(2, 9)], self._popped,
                      timeout=timeout, orphan=self._orphan, polling=True)
            return
        self.single_pops += 1
        if self.single_pops % 2:  # alternate (not drawn: the scenarios keep their draws)
            self.call(C.QUEUE_POP_STAMPED, [QUEUE, 1], lambda _obs: None, timeout=timeout,
                      orphan=self._orphan, polling=True)
            return
        self.call(C.QUEUE_POP, [QUEUE], lambda _obs: None, timeout=timeout,
                  orphan=self._orphan, polling=True)

    def _popped(self, obs: Observed) -> None:
        result = obs.result
        if obs.outcome == OK and isinstance(result, list) and len(result[0]) > 1:
            if self.rng.random() < 0.3:  # stopped early: the rest goes back to the head
                values, runs = result
                keep = self.rng.randrange(1, len(values))
                self.give_back = (values[keep:], ids.tail(runs, len(values) - keep))

    def _gave_back(self, obs: Observed) -> None:
        if obs.outcome == FAILED:
            self.give_back = (obs.args[1], obs.args[2])

    def _orphan(self, obs: Observed, result: Any) -> None:
        if obs.code == C.QUEUE_POP_STAMPED:
            if isinstance(result, list) and result[0]:
                self.cluster.propose_detached(obs.node, C.QUEUE_UNPOP_STAMPED,
                                              [QUEUE, *result])
        elif isinstance(result, str):
            self.cluster.propose_detached(obs.node, C.QUEUE_UNPOP, [QUEUE, result])


class WorkProducer(UniqueSender):
    """Pushes unique items to the work queue; a share ``scheduling`` of them at a random
    priority, most with a delay of up to 400 ms, half of those with every option
    combined (``WORK_PUSH_OPTIONS``: a msg_id, headers, the priority and delay), a few
    repeating an earlier msg_id with other options (the window answers them)."""

    kind = "work-producer"
    code = C.WORK_PUSH
    target = WORK
    scheduling = 0.0

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        #: The options' own draws: the others' stay those of plain runs.
        self._options_rng = random.Random(f"options-{cid}")

    def next_op(self) -> None:
        if self.draining or not self.scheduling or self.rng.random() >= self.scheduling:
            super().next_op()
            return
        self.n += 1
        delay = self.rng.choice([None, 0, self.rng.randrange(1, 400)])
        value, level = f"{self.cid}:{self.n}", self.rng.randrange(10)
        own = self._options_rng
        if own.random() < 0.5:
            msg_id = f"wo-{value}" if self.n < 3 or own.random() < 0.7 else (
                f"wo-{self.cid}:{own.randrange(1, self.n)}")
            options: dict[str, object] = {"msg_id": msg_id, "headers": {"v": value}}
            if level:
                options["priority"] = level
            if delay is not None:
                options["delay_ms"] = delay
            self.call(C.WORK_PUSH_OPTIONS, [self.target, options, None, value],
                      lambda _obs: None)
            return
        self.call(C.WORK_PUSH_SCHEDULED, [self.target, level, delay, None, None, value],
                  lambda _obs: None)


class Worker(Client):
    """Claims items (one, or a share ``batching`` of its claims up to eight at once like
    a prefetching ``deliveries()``, which then acks a share ``settle_batches`` of its
    items together in one operation), then acks, nacks or abandons each (a worker crash,
    possibly part way through a batch); may first extend the lease. A batch may end
    early and release the deliveries it did not start."""

    kind = "worker"
    #: The work queue it works: the plain one, or a consumer group's (a group member).
    target = WORK

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.settle: tuple[int, int] | None = None
        self.extend_to: int | None = None
        #: The share of deliveries whose lease is extended once before settling.
        self.extend = 0.0
        self.batching = 0.0
        self.prefetched: list[dict[str, Any]] = []
        self.release: list[int] = []
        #: The share of acks gathered and settled together (as ``deliveries()`` does).
        self.settle_batches = 0.0
        self.acks: list[int] = []
        #: The share of nacks made with a delay (ms, ``delayed_nack``).
        self.scheduling = 0.0
        self.delayed_nack = 0

    def next_op(self) -> None:
        if self.extend_to is not None:
            delivery_id, self.extend_to = self.extend_to, None
            self.call(C.WORK_EXTEND, [self.target, self.cid, delivery_id, None], lambda _obs: None)
            return
        if self.settle is not None:
            code, delivery_id = self.settle
            extra = [self.delayed_nack, None] if code == C.WORK_NACK_DELAYED else []
            self.call(code, [self.target, self.cid, delivery_id, *extra], self._settled)
            return
        if self.release:
            self.call(C.WORK_RELEASE, [self.target, self.cid, self.release], self._released)
            return
        if self.prefetched:
            self._start(self.prefetched.pop(0))
            self.next_op()
            return
        if self.acks:
            self.call(C.WORK_SETTLE_MANY, [self.target, self.cid, "acked", list(self.acks)],
                      self._settled_many)
            return
        if self.batching and self.rng.random() < self.batching:
            self.call(C.WORK_CLAIM_MANY, [self.target, self.cid, self.rng.randrange(2, 9), None],
                      self._claimed_many, polling=True)
            return
        self.call(C.WORK_CLAIM, [self.target, self.cid, None], self._claimed, polling=True)

    def _claimed_many(self, obs: Observed) -> None:
        if obs.outcome != OK or not isinstance(obs.result, list) or not obs.result[0]:
            return
        self.prefetched = list(obs.result[0])
        roll = self.rng.random()
        if roll < 0.1 and not self.draining:
            self.prefetched = []  # the worker died holding the batch: the leases expire
        elif roll < 0.3:  # the iteration ends after a few: the rest are released
            cut = self.rng.randrange(0, len(self.prefetched))
            self.release = [int(d["delivery_id"]) for d in self.prefetched[cut:]]
            del self.prefetched[cut:]

    def _released(self, obs: Observed) -> None:
        if obs.outcome == OK or self.rng.random() < 0.3:
            self.release = []

    def _claimed(self, obs: Observed) -> None:
        if obs.outcome != OK or not isinstance(obs.result, list) or obs.result[0] is None:
            return
        self._start(obs.result[0])

    def _start(self, delivery: dict[str, Any]) -> None:
        roll = self.rng.random()
        if roll < 0.1 and not self.draining:
            return  # abandoned: the lease expires and the reaper requeues it
        code = C.WORK_NACK if roll < 0.25 and not self.draining else C.WORK_ACK
        if code == C.WORK_ACK and self.settle_batches and self.rng.random() < self.settle_batches:
            self.acks.append(int(delivery["delivery_id"]))
        elif code == C.WORK_NACK and self.target == WORK and self.scheduling and (
                self.rng.random() < self.scheduling):
            self.delayed_nack = self.rng.randrange(1, 300)
            self.settle = (C.WORK_NACK_DELAYED, int(delivery["delivery_id"]))
        else:
            self.settle = (code, int(delivery["delivery_id"]))
        if self.extend and self.rng.random() < self.extend:
            self.extend_to = int(delivery["delivery_id"])

    def _settled(self, obs: Observed) -> None:
        if obs.outcome == OK or self.rng.random() < 0.3:
            self.settle = None

    def _settled_many(self, obs: Observed) -> None:
        if obs.outcome == OK or self.rng.random() < 0.3:
            self.acks = []


class GroupMember(Worker):
    """A member of a topic's consumer group: a worker of the group's work queue (it
    claims, acks, nacks, releases, abandons leases as a member that dies would)."""

    kind = "group-member"

    def __init__(self, cid: str, cluster: Host, rng: random.Random, group: str) -> None:
        super().__init__(cid, cluster, rng)
        self.target = group_queue_name(TOPIC, group)
        self.found_nothing = False

    def next_op(self) -> None:
        # Draining and nothing found last time: poll less, so the proposals of idle
        # members do not keep the leader busy at every check that the run drained.
        idle = not (self.settle or self.release or self.prefetched or self.acks
                    or self.extend_to is not None)
        if self.draining and self.found_nothing and idle and self.rng.random() < 0.8:
            return
        super().next_op()

    def _claimed(self, obs: Observed) -> None:
        self.found_nothing = obs.outcome == OK and isinstance(obs.result, list) and (
            obs.result[0] is None)
        super()._claimed(obs)

    def _claimed_many(self, obs: Observed) -> None:
        self.found_nothing = obs.outcome == OK and isinstance(obs.result, list) and (
            not obs.result[0])
        super()._claimed_many(obs)
