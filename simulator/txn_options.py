"""Transactions pushing with options into a bounded queue that holds due delayed elements.

:class:`TxnOptionsClient` works two queues of its own: :data:`TXO_QUEUE`, bounded to
:data:`CAPACITY` elements, and :data:`TXO_LOG`, unbounded. Into the bounded queue it
pushes delayed elements (``QUEUE_PUSH_OPTIONS`` with a short ``delay_ms``, now and then a
``ttl_ms``), pops with headers, and commits transactions (``TXN``) of a push with options
(headers, often a delay, now and then a ``ttl_ms``) of a new value into it together with
a plain push of the same value to the log; elements expire as the model says (a pop
never hands out one at or after its deadline; the leader's sweeps drop them).
A push with options first makes the delayed elements due at its entry ready, which
count against the capacity: the transaction must abort (``full``) when the ready ones
and those it makes ready fill the queue, and otherwise apply whole. Maintenance and pops
promote due elements too, so often some are due and not yet promoted when a transaction
applies.

The checker replays the two queues through :class:`TxnOptionsModel`: the bounded queue
as the options queue's model with the capacity (a push with options promotes, then is
refused ``Full`` while the ready elements fill the queue), the log as a FIFO. A committed
transaction whose push was refused (applied in part) fails the run in
:class:`~.txn.TxnModel`, and so does one aborted ``full`` that the model says fits.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C

from .client import OK, Client, Host, Observed
from .history import AppliedOp, Violation
from .queue_options import OptionsModel

#: The bounded queue and the log queue of :class:`TxnOptionsClient`.
TXO_QUEUE, TXO_LOG = "q-txo", "q-txo-log"
CAPACITY = 3


class TxnOptionsClient(Client):
    """Declares its two queues, then pushes delayed elements, pops, and commits
    transactions (module docstring)."""

    kind = "txn-options"

    def __init__(self, cid: str, cluster: Host, rng: random.Random, *,
                 ttl: bool = True) -> None:
        super().__init__(cid, cluster, rng)
        #: The ttl choices draw from a stream of their own, so that the client's other
        #: choices stay as they were. It is seeded from the state's words alone: the whole
        #: state ends with ``None``, whose hash is its address (differs per process).
        self.ttl_rng = random.Random(repr(rng.getstate()[1]))
        self.ttl_share = 0.3 if ttl else 0.0
        self.todo: list[list[Any]] = [[TXO_QUEUE, CAPACITY], [TXO_LOG, None]]
        self.n = 0

    def next_op(self) -> None:
        if self.todo:
            self.call(C.QUEUE_DECLARE, self.todo[0], self._declared)
            return
        if self.draining:
            self.stopped = True
            return
        rng = self.rng
        roll = rng.random()
        self.n += 1
        value = f"{self.cid}:{self.n}"
        if roll < 0.35:
            delayed: dict[str, Any] = {"delay_ms": rng.choice([1, 5, 20, 60, 150])}
            if self.ttl_rng.random() < self.ttl_share:
                delayed["ttl_ms"] = self.ttl_rng.choice([10, 50, 200])
            self.call(C.QUEUE_PUSH_OPTIONS, [TXO_QUEUE, delayed, value], _ignore)
        elif roll < 0.75:
            options: dict[str, Any] = {"headers": {"n": str(self.n)}}
            if rng.random() < 0.5:
                options["delay_ms"] = rng.choice([0, 10, 80])
            if self.ttl_rng.random() < self.ttl_share:
                options["ttl_ms"] = self.ttl_rng.choice([5, 40, 150, 2_000])
            ops = [[C.QUEUE_PUSH_OPTIONS, TXO_QUEUE, options, value],
                   [C.QUEUE_PUSH, TXO_LOG, value]]
            if rng.random() < 0.5:
                ops.reverse()
            self.call(C.TXN, ops, _ignore)
        elif roll < 0.97:
            self.call(C.QUEUE_POP_HEADERS, [TXO_QUEUE, rng.randint(1, 2)], _ignore)
        else:
            self.call(C.QUEUE_PROMOTE, [TXO_QUEUE], _ignore)

    def _declared(self, obs: Observed) -> None:
        if obs.outcome == OK and obs.result is None and self.todo:
            self.todo.pop(0)


def _ignore(_obs: Observed) -> None:
    return None


class BoundedOptionsModel(OptionsModel):
    """:data:`TXO_QUEUE`: the options queue's model with a capacity."""

    queue = TXO_QUEUE

    def apply(self, op: AppliedOp, now: int) -> None:
        if self.declared and op.code in (C.QUEUE_PUSH, C.QUEUE_PUSH_OPTIONS):
            if op.code == C.QUEUE_PUSH_OPTIONS:
                self._promote(now)
            if len(self.ready) >= CAPACITY:
                op.expect(QueuePushError.Full)
                return
        super().apply(op, now)

    def due(self, now: int) -> int:
        """The delayed elements due at ``now`` (a push with options promotes them)."""
        return sum(1 for e in self.delayed if e[0] <= now)


class TxnOptionsModel:
    """The checker's view of :class:`TxnOptionsClient`'s two queues."""

    def __init__(self) -> None:
        self.bounded = BoundedOptionsModel()
        self.log: deque[Any] | None = None
        #: Transactions' pushes that met due delayed elements: applied, and refused
        #: ``full`` because of them (the ready ones alone left room).
        self.due_applied = 0
        self.due_refused = 0
        #: Transactions' pushes into the bounded queue with a ``ttl_ms``, applied.
        self.ttl_applied = 0

    def handles(self, op: AppliedOp) -> bool:
        return bool(op.args) and op.args[0] in (TXO_QUEUE, TXO_LOG)

    def apply(self, op: AppliedOp, now: int) -> None:
        if op.args[0] == TXO_QUEUE:
            self.bounded.apply(op, now)
        elif op.code == C.QUEUE_DECLARE:
            op.expect(None)
            if self.log is None:
                self.log = deque()
        elif self.log is None or op.code != C.QUEUE_PUSH:
            raise Violation(f"index {op.index}: unexpected {C.op_name(op.code)} on {TXO_LOG}")
        else:
            op.expect(None)
            self.log.append(op.args[-1])

    def txn_push(self, inner: list[Any], now: int) -> None:
        """A committed transaction's op ``inner``, about to be applied at ``now``."""
        if inner[0] != C.QUEUE_PUSH_OPTIONS or inner[1] != TXO_QUEUE:
            return
        if self.bounded.due(now):
            self.due_applied += 1
        if "ttl_ms" in inner[2]:
            self.ttl_applied += 1

    def refuses(self, inner: list[Any], now: int) -> bool:
        """Whether a transaction's first push ``inner`` to :data:`TXO_QUEUE` at ``now``
        finds it full, counting the delayed elements it makes ready first."""
        if inner[0] != C.QUEUE_PUSH_OPTIONS or inner[1] != TXO_QUEUE:
            return False
        ready, due = len(self.bounded.ready), self.bounded.due(now)
        if ready < CAPACITY <= ready + due:
            self.due_refused += 1
        return ready + due >= CAPACITY

    def check_final(self, state: dict[str, Any]) -> None:
        self.bounded.check_final(state)
        queue = state.get("queues", {}).get(TXO_LOG)
        elements = [] if queue is None else queue[2]
        if elements != list(self.log or ()):
            raise Violation(f"{TXO_LOG} holds {elements!r:.100}, the model "
                            f"{list(self.log or ())!r:.100}")
