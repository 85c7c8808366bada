"""Cluster clients in the simulation: processes that are not members, as
``lazily_queue.connect`` makes them.

A :class:`SessionClient` sends one operation at a time through one member, wrapped in
``CLIENT_OP`` under the client's own session id and sequence number (``floor``: every
answer below it received), as :mod:`lazily_queue.client.session` sends them. When its
member crashes, is partitioned away (the attempt times out) or cannot commit, it links
to another member and sends the same operation again under the same number, until one
answer arrives; sometimes it also sends it through a second member while the first
attempt is still in flight (a client that gave up on a slow member). Each attempt goes
alone (``CLIENT_OP``) or as a member groups a client's ops (``CLIENT_OPS``); a
transaction (``TXN``) always alone, as a member proposes it.

Four kinds: a :class:`SessionProducer` pushes unique values (a share of them as a
client's transaction with a publish of the same value: applied once, all or none), a
:class:`SessionConsumer` pops (one, or several at once), a :class:`SessionWorker`
claims work items and acks them, a :class:`SessionGroupMember` does the same in a
topic's consumer group. The replicated state machine must apply each number
once: the checker finds an operation applied twice (:mod:`.history` records each
client op that really ran), one acknowledged but not in the log, one applied but never
answered to its client (a pop whose element the consumer never got), and an element
delivered to two consumers (:mod:`.deliveries`).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from lazily_queue.core.groups import group_queue_name
from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE

from .client import FAILED, OK, QUEUE, TOPIC, UNKNOWN, WORK, Client, Host, Observed
from .history import Violation

#: The share of operations also sent through a second member while the first is in flight.
DOUBLE_SEND = 0.15
#: The share of a session producer's pushes sent as a transaction with a publish.
IN_TRANSACTION = 0.25


class SessionClient(Client):
    """Sends one operation at a time under its own client session; retries an unanswered
    one through another member under the same sequence number. Subclasses say what comes
    next (:meth:`next_inner`) and take each answer (:meth:`answered`)."""

    kind = "session-client"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.session = CLIENT_SESSION_BASE + 1 + rng.getrandbits(60)
        self.seq = 0
        #: The operation waiting for an answer: its sequence number, code and arguments.
        self.pending: tuple[int, int, list[Any]] | None = None
        self.attempts = 0
        #: An attempt of the pending op may have applied: one went unanswered (timed out,
        #: its member crashed, not clean) or went through a second member (as a real
        #: client's op is ``unknown`` once a link it was sent on ended unanswered).
        self.maybe_applied = False
        self.grouped = False
        self.retries = 0
        self.moves = 0
        #: Every answer received: sequence number -> result.
        self.answers: dict[int, Any] = {}

    @property
    def settled(self) -> bool:
        return not self.busy and self.pending is None

    def next_inner(self) -> tuple[int, list[Any]] | None:
        """The next operation (code and arguments), or ``None`` to stop."""
        raise NotImplementedError

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        """The answer to an operation (once per sequence number)."""

    def next_op(self) -> None:
        if self.pending is None:
            inner = self.next_inner()
            if inner is None:
                self.stopped = True
                return
            self.seq += 1
            self.pending = (self.seq, *inner)
            self.maybe_applied = False
        seq, code, args = self.pending
        wrapped = self._wrapped(seq, code, args)
        self.grouped = wrapped[0] == C.CLIENT_OPS
        obs = self.call(wrapped[0], wrapped[1:], self._done,
                        timeout=self.rng.uniform(0.3, 2.0))
        if obs is None:
            return
        self.attempts += 1
        member_seq = dataclasses.replace(obs)  # the member's own numbering, for resubmits
        obs.session, obs.seq, obs.code, obs.args = self.session, seq, code, list(args)
        roll = self.rng.random()
        if roll < DOUBLE_SEND:
            others = [n for n in self._running() if n != self.node]
            if others:
                self.maybe_applied = True
                again = self._wrapped(seq, code, args)
                self.cluster.propose_detached(self.rng.choice(others), again[0], again[1:],
                                              timeout=self.rng.uniform(0.3, 2.0))
        elif roll < DOUBLE_SEND + 0.05:
            self.cluster.resubmit_later(self.node, member_seq)

    def _wrapped(self, seq: int, code: int, args: list[Any]) -> list[Any]:
        """``[code, *args]`` of the attempt: alone (``CLIENT_OP``) or, as a member groups a
        client's ops, in a ``CLIENT_OPS`` group of one; a transaction alone."""
        if code == C.TXN or self.rng.random() < 0.5:
            return [C.CLIENT_OP, self.session, seq, seq, code, *args]
        return [C.CLIENT_OPS, self.session, seq, [seq, code, *args]]

    def _running(self) -> list[str]:
        return [n for n in self.cluster.member_ids() if self.cluster.running(n)]

    def _done(self, obs: Observed) -> None:
        if obs.outcome == OK and self.grouped:
            if not (isinstance(obs.result, list) and len(obs.result) == 1):
                raise Violation(f"{self.cid}: its group of one op (seq {obs.seq}, "
                                f"{C.op_name(obs.code)}) was answered {obs.result!r:.100}")
            obs.result = obs.result[0]  # the group's results: this op's alone
        if obs.outcome == OK:
            self.pending = None
            self.answers[obs.seq] = obs.result
            self.answered(obs.code, obs.args, obs.result)
            return
        # No answer (or "not applied" from this member): the same op goes again, through
        # another member. A report of "not applied" holds for this attempt only.
        self.maybe_applied = self.maybe_applied or obs.outcome != FAILED
        obs.outcome = UNKNOWN
        self._move()

    def lost(self, obs: Observed) -> None:
        self.maybe_applied = True
        self._move()

    def _move(self) -> None:
        self.retries += 1
        others = [n for n in self._running() if n != self.node]
        if others:
            self.node = self.rng.choice(others)
            self.moves += 1


class SessionProducer(SessionClient):
    """Pushes unique values; a value the bounded queue refused goes again as a new push."""

    kind = "session-producer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.n = 0
        #: A value the bounded queue refused: pushed again under a new number.
        self.again: str | None = None

    def next_inner(self) -> tuple[int, list[Any]] | None:
        if self.draining and self.again is None:
            return None
        value = self.again
        if value is None:
            self.n += 1
            value = f"{self.cid}:{self.n}"
        self.again = None
        if self.rng.random() < IN_TRANSACTION:
            return C.TXN, [[C.QUEUE_PUSH, QUEUE, value], [C.TOPIC_PUBLISH, TOPIC, value]]
        return C.QUEUE_PUSH, [QUEUE, value]

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        if result == QueuePushError.Full:
            self.again = args[1]
        elif code == C.TXN and result[:3] == [False, 0, "full"]:
            self.again = args[0][2]  # the queue was full: nothing applied


class SessionConsumer(SessionClient):
    """Pops one element, or (a share ``batching`` of its pops) up to eight at once, and
    keeps what it got: a pop retried across members must hand it the elements it took,
    once."""

    kind = "session-consumer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.batching = 0.0
        #: The elements its pops returned, in order.
        self.delivered: list[Any] = []

    def next_inner(self) -> tuple[int, list[Any]] | None:
        if self.draining:  # the plain consumers drain the queue; an answer is never lost
            return None
        if self.batching and self.rng.random() < self.batching:
            return C.QUEUE_POP_MANY, [QUEUE, self.rng.randrange(2, 9)]
        return C.QUEUE_POP, [QUEUE]

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        if code == C.QUEUE_POP_MANY and isinstance(result, list):
            self.delivered.extend(result)
        elif code == C.QUEUE_POP and isinstance(result, str):
            self.delivered.append(result)


class SessionWorker(SessionClient):
    """Claims one work item at a time and acks it, both retried across members."""

    kind = "session-worker"
    #: The work queue it works: the plain one, or a consumer group's.
    target = WORK

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.to_ack: int | None = None
        #: Its acks answered as settling the delivery.
        self.acked = 0

    def next_inner(self) -> tuple[int, list[Any]] | None:
        if self.to_ack is not None:
            return C.WORK_ACK, [self.target, self.cid, self.to_ack]
        if self.draining:  # the plain workers (the plain group members) drain it
            return None
        return C.WORK_CLAIM, [self.target, self.cid, None]

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        if code == C.WORK_ACK:
            self.to_ack = None
            self.acked += isinstance(result, list) and result[:1] == [True]
        elif isinstance(result, list) and result and isinstance(result[0], dict):
            self.to_ack = int(result[0]["delivery_id"])


class SessionGroupMember(SessionWorker):
    """A member of a topic's consumer group that is a cluster client: its claims and acks
    of the group's elements go under its session, retried across members (the group's
    model fails the run when two members hold one element)."""

    kind = "session-group-member"

    def __init__(self, cid: str, cluster: Host, rng: random.Random, group: str) -> None:
        super().__init__(cid, cluster, rng)
        self.target = group_queue_name(TOPIC, group)
