"""Cluster clients in the simulation: processes that are not members, as
``lazily_queue.connect`` makes them.

A :class:`SessionProducer` pushes unique values through one member at a time, each
push wrapped in ``CLIENT_OP`` under the client's own session id and sequence number
(``floor``: every answer below it received), as :mod:`lazily_queue.client.session`
sends them. When its member crashes, is partitioned away (the attempt times out) or
cannot commit, it links to another member and sends the same push again under the same
number, until one answer arrives; sometimes it also sends it through a second member
while the first attempt is still in flight (a client that gave up on a slow member).
Each attempt goes alone (``CLIENT_OP``) or as a member groups a client's ops
(``CLIENT_OPS``). A share of the pushes go as a client's transaction (``TXN`` inside
``CLIENT_OP``, as a member proposes it: never grouped) together with a publish of the
same value: retried the same way, it applies once and all or none.
The replicated state machine must apply each number once: the checker finds a push
applied twice (:mod:`.history` records each client op that really ran), and one that
was acknowledged but is not in the log.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE

from .client import OK, QUEUE, TOPIC, UNKNOWN, Client, Host, Observed

#: The share of pushes also sent through a second member while the first is in flight.
DOUBLE_SEND = 0.15
#: The share of pushes sent as a transaction with a publish of the same value.
IN_TRANSACTION = 0.25


class SessionProducer(Client):
    """Pushes unique values under its own client session; retries an unanswered push
    through another member under the same sequence number."""

    kind = "session-producer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.session = CLIENT_SESSION_BASE + 1 + rng.getrandbits(60)
        self.seq = 0
        self.n = 0
        #: The push waiting for an answer: its sequence number, value and whether it
        #: goes in a transaction.
        self.pending: tuple[int, str, bool] | None = None
        #: A value the bounded queue refused: pushed again under a new number.
        self.again: str | None = None
        self.attempts = 0
        self.grouped = False
        self.retries = 0
        self.moves = 0

    @property
    def settled(self) -> bool:
        return not self.busy and self.pending is None

    def next_op(self) -> None:
        if self.pending is None:
            if self.draining and self.again is None:
                self.stopped = True
                return
            value = self.again
            if value is None:
                self.n += 1
                value = f"{self.cid}:{self.n}"
            self.again = None
            self.seq += 1
            self.pending = (self.seq, value, self.rng.random() < IN_TRANSACTION)
        seq, value, txn = self.pending
        args = self._wrapped(seq, value, txn)
        self.grouped = args[0] == C.CLIENT_OPS
        obs = self.call(args[0], args[1:], self._done, timeout=self.rng.uniform(0.3, 2.0))
        if obs is None:
            return
        self.attempts += 1
        member_seq = dataclasses.replace(obs)  # the member's own numbering, for resubmits
        obs.session, obs.seq = self.session, seq
        obs.code, obs.args = (C.TXN, _txn(value)) if txn else (C.QUEUE_PUSH, [QUEUE, value])
        roll = self.rng.random()
        if roll < DOUBLE_SEND:
            others = [n for n in self._running() if n != self.node]
            if others:
                again = self._wrapped(seq, value, txn)
                self.cluster.propose_detached(self.rng.choice(others), again[0], again[1:],
                                              timeout=self.rng.uniform(0.3, 2.0))
        elif roll < DOUBLE_SEND + 0.05:
            self.cluster.resubmit_later(self.node, member_seq)

    def _wrapped(self, seq: int, value: str, txn: bool) -> list[Any]:
        """``[code, *args]`` of the push: alone (``CLIENT_OP``) or, as a member groups a
        client's ops, in a ``CLIENT_OPS`` group of one; a transaction alone."""
        if txn:
            return [C.CLIENT_OP, self.session, seq, seq, C.TXN, *_txn(value)]
        if self.rng.random() < 0.5:
            return [C.CLIENT_OP, self.session, seq, seq, C.QUEUE_PUSH, QUEUE, value]
        return [C.CLIENT_OPS, self.session, seq, [seq, C.QUEUE_PUSH, QUEUE, value]]

    def _running(self) -> list[str]:
        return [n for n in self.cluster.member_ids() if self.cluster.running(n)]

    def _done(self, obs: Observed) -> None:
        if obs.outcome == OK and self.grouped:
            assert isinstance(obs.result, list) and len(obs.result) == 1, obs.result
            obs.result = obs.result[0]  # the group's results: this push's alone
        if obs.outcome == OK:
            self.pending = None
            if obs.result == QueuePushError.Full or (
                    obs.code == C.TXN and obs.result[:3] == [False, 0, "full"]):
                # Answered: the value goes again, as a new push.
                self.again = obs.args[1] if obs.code == C.QUEUE_PUSH else obs.args[0][2]
            return
        # No answer (or "not applied" from this member): the same push goes again, through
        # another member. A report of "not applied" holds for this attempt only.
        obs.outcome = UNKNOWN
        self._move()

    def lost(self, obs: Observed) -> None:
        self._move()

    def _move(self) -> None:
        self.retries += 1
        others = [n for n in self._running() if n != self.node]
        if others:
            self.node = self.rng.choice(others)
            self.moves += 1


def _txn(value: str) -> list[list[Any]]:
    """The ops of a transaction pushing and publishing ``value``."""
    return [[C.QUEUE_PUSH, QUEUE, value], [C.TOPIC_PUBLISH, TOPIC, value]]
