"""Cluster clients with registered sessions, and the model of their queue.

A :class:`RegisteringClient` registers its session (``SESSION_REGISTER``, a member's op:
the answer is the id), declares :data:`REG_QUEUE` and pushes unique values to it under
that session, retried across members as every session client's ops are. Now and then it
registers a new session for its next ops (a client opening another), and it sends an
op it was answered before again, under the session it was sent in, through any member
(a retry arriving late). The registering clients share one owner tag, and the scenario
keeps few client sessions (:func:`session_bound`), so their sessions are given up for
the bound while such retries, and their own ops, are on the way: an op under a session
the cluster no longer holds must be refused ``session_unknown``, never applied. The
client takes that answer as a real client does (:mod:`lazily_queue.client.registration`):
an op no attempt of which may have applied (none went unanswered, none through a second
member) was applied nowhere, and goes again, renumbered, under a new session; the
others fail with their outcome unknown.

:class:`RegisteredSessionsModel` replays the ops on :data:`REG_QUEUE` in log order: a
push answered ``None`` applied; one whose first appearance was answered
``session_unknown`` is not in the replay at all (:mod:`.history` fences it off), and
must never apply: the checker fails an op its client was told was not applied that the
log applied (a retry answered otherwise than its first application is caught by the
checker's replay, an op run twice by the history); at the end the queue holds exactly
the applied pushes, each once, in order.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.client_sessions import owner_tag
from lazily_queue.replicated.session_register import MAX_KEY, REGISTERED_BASE, UNKNOWN

from .client import FAILED, OK, Client, Host, Observed
from .client import UNKNOWN as UNKNOWN_OUTCOME
from .history import AppliedOp, Violation
from .session_client import SessionClient

#: The queue these clients push to (no other client uses it).
REG_QUEUE = "reg-sessions"
#: The owner tag all registering clients share.
REG_TAG = owner_tag("registering")
#: The share of ops after which a client registers a new session.
CHURN = 0.2
#: The share of acts that first send an answered op again.
LATE_RETRY = 0.3
#: Client sessions the registering clients may hold beyond the other clients' ones.
HEADROOM = 4


def register_args(tag: int, client: Client) -> list[int]:
    """``SESSION_REGISTER``'s arguments for ``client``, as members of every version
    propose them: mostly with a nonce (the first sets the cluster's key), else the older
    ``[tag]``. Drawn from the client's name and count of registers, not from its random
    stream, which recorded scenarios replay."""
    client.registers += 1
    rng = random.Random(f"{client.cid}:{client.registers}")
    return [tag] if rng.random() < 0.2 else [tag, rng.randint(1, MAX_KEY)]


def session_bound(session_clients: int) -> int:
    """The client sessions a scenario with registering clients keeps: at the bound the
    registering clients' owner holds the most (at least :data:`HEADROOM`), so only their
    sessions are given up (the other clients' ids are opened by their ops)."""
    return session_clients + HEADROOM


class RegisteringClient(SessionClient):
    """Registers its session, pushes under it, registers new ones, retries late."""

    kind = "registering"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.session = 0
        self.declared = False
        self.n = 0
        self.registered = 0
        #: Ops answered before: ``[code, *args]`` of each attempt, under its session.
        self.answered_before: list[list[Any]] = []
        self.late_retries = 0
        self.forgotten = 0
        #: Ops refused under a forgotten session and sent again under the next one.
        self.sent_again = 0
        #: The op to send again under the next session: ``(code, args)``.
        self.again: tuple[int, list[Any]] | None = None

    def next_op(self) -> None:
        rng = self.rng
        if self.answered_before and rng.random() < LATE_RETRY:
            running = self._running()
            if running:
                wrapped = rng.choice(self.answered_before)
                self.cluster.propose_detached(rng.choice(running), wrapped[0], wrapped[1:],
                                              timeout=rng.uniform(0.3, 2.0))
                self.late_retries += 1
        if self.session == 0:
            if not self.draining:
                self.call(C.SESSION_REGISTER, register_args(REG_TAG, self), self._registered,
                          timeout=rng.uniform(0.3, 2.0))
            else:
                self.stopped = True
            return
        super().next_op()

    def _registered(self, obs: Observed) -> None:
        if obs.outcome == OK and type(obs.result) is int and obs.result >= REGISTERED_BASE:
            self.session, self.seq = obs.result, 0
            self.registered += 1
        else:  # another registration next time (an applied one stays unused)
            self._move()

    def _done(self, obs: Observed) -> None:
        result = obs.result
        if obs.outcome == OK and self.grouped and type(result) is list and len(result) == 1:
            result = result[0]
        if obs.outcome == OK and result == UNKNOWN:
            # The cluster forgot this session. With an attempt that may have applied, the
            # op's outcome is unknown (SessionForgotten); with none, it was not applied
            # anywhere: the client sends it again under its next session.
            obs.result = result
            if self.maybe_applied:
                obs.outcome = UNKNOWN_OUTCOME
            else:
                obs.outcome = FAILED
                self.again = (obs.code, list(obs.args))
                self.sent_again += 1
            self.pending = None
            self.forgotten += 1
            self.session = 0
            return
        super()._done(obs)

    def next_inner(self) -> tuple[int, list[Any]] | None:
        if self.again is not None:
            again, self.again = self.again, None
            return again
        if not self.declared:
            return C.QUEUE_DECLARE, [REG_QUEUE, None]
        if self.draining:
            return None
        self.n += 1
        return C.QUEUE_PUSH, [REG_QUEUE, f"{self.cid}:{self.session:x}:{self.n}"]

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        seq = self.seq
        self.answered_before = [*self.answered_before[-23:],
                                [C.CLIENT_OP, self.session, seq, seq, code, *args]]
        if code == C.QUEUE_DECLARE:
            self.declared = True
        if self.rng.random() < CHURN:
            self.session = 0


class RegisteredSessionsModel:
    """The pushes applied to :data:`REG_QUEUE`, in log order."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        #: Ops refused under a session the cluster no longer held.
        self.refused = 0
        self.registered = 0

    def handles(self, op: AppliedOp) -> bool:
        return op.code == C.SESSION_REGISTER or (bool(op.args) and op.args[0] == REG_QUEUE)

    def apply(self, op: AppliedOp) -> None:
        if op.code == C.SESSION_REGISTER:
            if type(op.result) is not int or op.result < REGISTERED_BASE:
                raise Violation(f"index {op.index}: session_register answered "
                                f"{op.result!r:.120}, not a registered session id")
            self.registered += 1
            return
        if op.code == C.QUEUE_PUSH:
            op.expect(None)
            self.values.append(op.args[1])

    def fenced(self, ops: Iterable[AppliedOp]) -> None:
        """Count the first appearances refused under a forgotten session (never applied:
        :mod:`.history` keeps them apart)."""
        self.refused += sum(op.result == UNKNOWN for op in ops)

    def retried(self, op: AppliedOp) -> None:
        """``op`` was applied before (the checker's replay compared the results)."""
        self.refused += op.result == UNKNOWN

    def check_final(self, state: dict[str, Any]) -> None:
        queue = state.get("queues", {}).get(REG_QUEUE)
        held = [] if queue is None else queue[2]
        if held != self.values:
            raise Violation(f"queue {REG_QUEUE!r} holds {held!r:.200}, the model "
                            f"{self.values!r:.200}")
        if len(set(held)) != len(held):
            raise Violation(f"queue {REG_QUEUE!r} holds a value twice: {held!r:.200}")
