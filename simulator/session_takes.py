"""A cluster client taking large elements with several takes in flight under one
session, in the sized form (its floor negated, as a client does through a member
announcing ``client-take-room-v1``): its session's kept results reach their bound, so
each take is held to the room the others leave (:mod:`lazily_queue.replicated.take_bytes`).

A :class:`SessionTaker` declares :data:`TAKE_QUEUE`, then in one round pushes
:data:`BATCH` large elements to it (strings of :data:`CHARS` characters), one at a
time, and takes them back with :data:`TAKES` ``QUEUE_POP_STAMPED`` in flight at once,
each under the next sequence number, until the round's elements are all taken (then
one more op, its floor past them, lets its session forget their results). Every op goes
again under its number through another member until it is answered (a member crashed,
could not commit, its attempt timed out, or the answer of a take was lost:
:data:`ANSWER_LOST`). A take answered ``no_room`` took nothing: it goes again under a
new number once it is the session's oldest op unanswered, as
:mod:`lazily_queue.client.take_room` sends it.

Checked: every op applied under its session is answered with the result it applied
with, so never as no longer kept (:func:`~.deliveries.check_session_answers`); each
take applied takes its queue's head in order, at least one element unless it answered
``no_room`` (:class:`TakeModel`); the client got every element pushed exactly once
(:func:`check_takers`).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from typing import Any

from lazily_queue.core.queue import QueuePopError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.session_results import NOT_KEPT
from lazily_queue.replicated.take_bytes import NO_ROOM

from .client import OK, UNKNOWN, Client, Host, Observed
from .history import AppliedOp, Violation
from .session_client import SessionClient

TAKE_QUEUE = "tq"
#: Elements pushed per round, the characters each holds after its name, and the takes in
#: flight at once. An element counts about 880 kB as kept results are counted (4 bytes a
#: character past ASCII) and travels as 440 kB: four a take (4 MiB), so three full takes
#: in flight come to more than the 8 MiB a session keeps.
BATCH, CHARS, TAKES = 10, 220_000, 4
#: The share of take answers lost with their link after the take applied.
ANSWER_LOST = 0.3


class SessionTaker(SessionClient):
    """Takes large elements several at once under its session (module docstring)."""

    kind = "session-taker"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        #: The ops unanswered: sequence number -> (code, arguments).
        self.flight: dict[int, tuple[int, list[Any]]] = {}
        #: Those with an attempt on the way.
        self.sent: set[int] = set()
        #: Those answered ``no_room`` and numbered again: each goes once the oldest.
        self.waiting: set[int] = set()
        self.declared = self.released = False
        self.rounds = 0
        #: The elements pushed (answered), and those its takes got.
        self.pushed: list[str] = []
        self.delivered: list[str] = []
        self.no_room = 0
        #: Takes answered as applied with their result no longer kept (their elements
        #: lost: :func:`~.deliveries.check_session_answers` fails the run).
        self.not_kept = 0

    @property
    def settled(self) -> bool:
        return not self.flight and (len(self.delivered) == len(self.pushed)
                                    or self.not_kept > 0)

    def act(self) -> None:
        if self.stopped or self.quiet or self.cluster.is_paused(self.node):
            return
        if not self.cluster.running(self.node):
            running = self._running()
            if not running:
                return
            self.node = self.rng.choice(running)
        if not self.flight:
            self._next()
        oldest = min(self.flight, default=0)
        for seq in sorted(self.flight):
            if seq not in self.sent and (seq not in self.waiting or seq == oldest):
                self._send(seq)

    def _next(self) -> None:
        """Issue what comes next: the declaration, a push, or the round's takes."""
        if not self.declared:
            self._issue(C.QUEUE_DECLARE, [TAKE_QUEUE, None])
        elif len(self.pushed) < self.rounds * BATCH:
            n = len(self.pushed)
            self._issue(C.QUEUE_PUSH, [TAKE_QUEUE, f"{self.cid}:{n}:" + "é" * CHARS])
        elif len(self.delivered) < len(self.pushed) and not self.not_kept:
            for _ in range(min(TAKES, len(self.pushed) - len(self.delivered))):
                self._issue(C.QUEUE_POP_STAMPED, [TAKE_QUEUE, 256])
        elif self.rounds == 0 and not self.draining:
            self.rounds += 1
            self._next()
        elif self.rounds and not self.released:  # the floor passes the round's results
            self.released = True
            self._issue(C.QUEUE_DECLARE, [TAKE_QUEUE, None])

    def _issue(self, code: int, args: list[Any]) -> None:
        self.seq += 1
        self.flight[self.seq] = (code, args)

    def _send(self, seq: int) -> None:
        code, args = self.flight[seq]
        floor = min(self.flight)
        obs = self.call(C.CLIENT_OP, [self.session, seq, -floor, code, *args],
                        lambda o: self._answered(seq, o), timeout=self.rng.uniform(0.3, 2.0))
        if obs is None:
            self._move()
            return
        self.sent.add(seq)
        obs.session, obs.seq, obs.code, obs.args = self.session, seq, code, list(args)

    def _answered(self, seq: int, obs: Observed) -> None:
        self.sent.discard(seq)
        if seq not in self.flight:
            return
        code, args = self.flight[seq]
        if obs.outcome == OK and code == C.QUEUE_POP_STAMPED and (
                self.rng.random() < ANSWER_LOST):
            obs.outcome = UNKNOWN  # its link ended before the answer: sent again
        if obs.outcome != OK:
            obs.outcome = UNKNOWN  # this attempt's word only: it goes again under its number
            self._move()
            return
        del self.flight[seq]
        self.waiting.discard(seq)
        self.answers[seq] = obs.result
        if obs.result == NO_ROOM:
            self.no_room += 1
            self._issue(code, args)
            self.waiting.add(self.seq)
        elif code == C.QUEUE_DECLARE:
            self.declared = self.declared or obs.result is None
        elif code == C.QUEUE_PUSH:
            self.pushed.append(args[1])
        elif isinstance(obs.result, list):
            self.delivered.extend(obs.result[0])
        elif obs.result == NOT_KEPT:
            self.not_kept += 1

    def lost(self, obs: Observed) -> None:
        self.sent.discard(obs.seq)
        self._move()


class TakeModel:
    """:data:`TAKE_QUEUE` as the log applied its ops."""

    def __init__(self) -> None:
        self.queue: deque[Any] = deque()

    @staticmethod
    def handles(op: AppliedOp) -> bool:
        return (op.code in (C.QUEUE_DECLARE, C.QUEUE_PUSH, C.QUEUE_POP_STAMPED)
                and bool(op.args) and op.args[0] == TAKE_QUEUE)

    def apply(self, op: AppliedOp) -> None:
        q = self.queue
        if op.code == C.QUEUE_DECLARE:
            op.expect(None)
        elif op.code == C.QUEUE_PUSH:
            q.append(op.args[1])
            op.expect(None)
        elif op.result == NO_ROOM:
            return  # took nothing
        elif not q:
            op.expect(QueuePopError.Empty)
        else:
            taken = op.result[0] if isinstance(op.result, list) else None
            if not taken or len(taken) > min(op.args[1], len(q)) or any(
                    value != q[i] for i, value in enumerate(taken)):
                raise Violation(f"index {op.index}: a take of {TAKE_QUEUE!r} returned "
                                f"{op.result!r:.80}, not the queue's head")
            for _ in taken:
                q.popleft()


def check_takers(clients: Sequence[Client]) -> tuple[int, int]:
    """Every element a taker pushed was taken once, by it; returns the elements and the
    takes answered ``no_room``."""
    elements = no_room = 0
    for client in clients:
        if isinstance(client, SessionTaker):
            if sorted(client.delivered) != sorted(client.pushed):
                raise Violation(f"{client.cid}: took {len(client.delivered)} elements of the "
                                f"{len(client.pushed)} it pushed, or some twice")
            elements += len(client.delivered)
            no_room += client.no_room
    return elements, no_room
