"""Message expiry in the simulation: a TTL client and the checker's model of it.

:class:`TtlClient` works a queue of its own (:data:`TTL_QUEUE`, with a default TTL):
it pushes values with a per-message TTL (or the default), pops batches and now and then
proposes a sweep (of a few elements at most, or all), through whichever member it is
on, under every fault. The checker
replays its ops through :class:`ExpiryModel`, an independent model of the contract: an
element is expired from the first entry stamped at or after its deadline (enqueue stamp
plus TTL); a pop at stamp ``now`` removes the expired elements at the head and returns
live ones only, skipping the expired ones it meets (at most ``EXPIRE_LIMIT`` of them:
past that it stops before the next expired one); a sweep removes at most its limit. A
pop that hands out an element at
or after its deadline fails the run, and so does any result or final state that is not
the model's.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from lazily_queue.core.queue import QueuePopError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.expiry import EXPIRE_LIMIT
from lazily_queue.replicated.ops import OpError

from .client import OK, Client, Host, Observed
from .history import AppliedOp, Violation

#: The queue the TTL client works (not the checker's main queue).
TTL_QUEUE = "q-ttl"
#: Its default TTL, in milliseconds of leader time.
DEFAULT_TTL_MS = 300


def sweep_args(name: str, kind: str, sent: int) -> list[Any]:
    """A client's sweep of cell ``name`` after ``sent`` ops: at most 1, 2 or
    ``EXPIRE_LIMIT`` elements, or all of them (the form of an older log), in turn."""
    limit = (None, 1, 2, EXPIRE_LIMIT)[sent % 4]
    return [name, kind] if limit is None else [name, kind, limit]


def sweep_limit(args: list[Any]) -> int | None:
    """The limit of a sweep's ``args`` (``None``: all)."""
    return args[2] if len(args) > 2 else None


class TtlClient(Client):
    """Declares :data:`TTL_QUEUE` with a default TTL, then pushes with and without a
    TTL of their own, pops up to four at once and sometimes proposes a sweep."""

    kind = "ttl-client"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.todo: list[tuple[int, list[Any]]] = [
            (C.QUEUE_DECLARE, [TTL_QUEUE, None]),
            (C.EXPIRY_RULES, [TTL_QUEUE, "queue", DEFAULT_TTL_MS, None]),
        ]
        self.n = 0

    def next_op(self) -> None:
        if self.todo:
            code, args = self.todo[0]
            self.call(code, args, self._declared)
            return
        if self.draining:
            self.stopped = True
            return
        roll = self.rng.random()
        if roll < 0.5:
            self.n += 1
            value = f"{self.cid}:{self.n}"
            if self.rng.random() < 0.7:
                ttl = self.rng.choice([10, 50, 150, 600, 5_000])
                self.call(C.QUEUE_PUSH_TTL, [TTL_QUEUE, ttl, value], _ignore)
            else:
                self.call(C.QUEUE_PUSH, [TTL_QUEUE, value], _ignore)
        elif roll < 0.9:
            self.call(C.QUEUE_POP_STAMPED, [TTL_QUEUE, self.rng.randint(1, 4)], _ignore)
        else:
            self.call(C.EXPIRE, sweep_args(TTL_QUEUE, "queue", len(self.ops)), _ignore)

    def _declared(self, obs: Observed) -> None:
        if obs.outcome == OK and obs.result is None and self.todo:
            self.todo.pop(0)


def _ignore(_obs: Observed) -> None:
    return None


class DeclaredQueueModel:
    """A model of a queue its client declares first (:attr:`queue`): the declaration
    gate, and the takes that skip expired elements (each element's deadline at
    :attr:`DEADLINE` of its tuple)."""

    queue = ""
    DEADLINE = 1

    def __init__(self) -> None:
        self.declared = False
        self.expired = 0

    def gated(self, op: AppliedOp) -> bool:
        """Whether ``op`` is done with: the declaration (checked), or an op that came
        before the declaration succeeded (it must have been refused)."""
        if op.code == C.QUEUE_DECLARE:
            self.declared = True
            op.expect(None)
            return True
        if not self.declared:
            if not isinstance(op.result, OpError):
                raise Violation(f"index {op.index}: {C.op_name(op.code)} on {self.queue} "
                                "before its declaration succeeded")
            return True
        return False

    def expired_head(self, q: deque[Any], now: int) -> bool:
        """Whether the head of ``q`` expired at ``now``."""
        return bool(q) and q[0][self.DEADLINE] is not None and now >= q[0][self.DEADLINE]

    def expire_from(self, q: deque[Any], now: int, limit: int | None = None) -> int:
        """Remove the elements of ``q`` expired at ``now`` at its head, at most ``limit``
        (``None``: all); how many."""
        n = 0
        while (limit is None or n < limit) and self.expired_head(q, now):
            q.popleft()
            n += 1
        self.expired += n
        return n

    def take_live(self, q: deque[Any], n: int, now: int) -> list[Any]:
        """Up to ``n`` live elements of ``q`` at ``now``, the expired ones met removed (at
        most ``EXPIRE_LIMIT``: the take stops at an expired head past that)."""
        taken: list[Any] = []
        left = EXPIRE_LIMIT
        while len(taken) < n:
            left -= self.expire_from(q, now, left)
            if not q or self.expired_head(q, now):
                break
            taken.append(q.popleft())
        return taken


class ExpiryModel(DeclaredQueueModel):
    """The TTL queue as the contract states it: ``(value, deadline)`` in FIFO order."""

    queue = TTL_QUEUE

    def __init__(self) -> None:
        super().__init__()
        self.default: int | None = None
        self.q: deque[tuple[Any, int | None]] = deque()
        self.delivered = 0

    def apply(self, op: AppliedOp, now: int) -> None:
        """Apply ``op`` (on :data:`TTL_QUEUE`) at leader time ``now``, checking its result."""
        code, args = op.code, op.args
        if self.gated(op):
            return
        if code == C.EXPIRY_RULES:
            if self.default is None:
                self.default = args[2]
            op.expect(None if args[2] == self.default else op.result)
        elif code == C.QUEUE_PUSH:
            self._push(args[1], None, now)
            op.expect(None)
        elif code == C.QUEUE_PUSH_TTL:
            self._push(args[2], args[1], now)
            op.expect(None)
        elif code == C.EXPIRE:
            op.expect(self.expire_from(self.q, now, sweep_limit(args)))
        elif code == C.QUEUE_POP_STAMPED:
            self._pop(op, args[1], now)
        else:
            raise Violation(f"index {op.index}: unexpected {C.op_name(code)} on {TTL_QUEUE}")

    def _push(self, value: Any, ttl: int | None, now: int) -> None:
        ttl = ttl if ttl is not None else self.default
        self.q.append((value, None if ttl is None else now + ttl))

    def _pop(self, op: AppliedOp, n: int, now: int) -> None:
        values = [value for value, _ in self.take_live(self.q, n, now)]
        result = op.result
        if not values:
            op.expect(QueuePopError.Empty)
            return
        if isinstance(result, QueuePopError) or type(result) is not list or not result:
            raise Violation(f"index {op.index}: pop of {TTL_QUEUE} returned {result!r:.80}, "
                            f"the model says {values!r:.80}")
        if result[0] != values:
            late = [v for v in result[0] if v not in values]
            what = "an expired element" if late else "other elements"
            raise Violation(f"index {op.index}: a pop at {now} delivered {what}: "
                            f"{result[0]!r:.80}, the model says {values!r:.80}")
        self.delivered += len(values)

    def check_final(self, state: dict[str, Any]) -> None:
        """A replica's final state of the TTL queue and its expired count are the model's."""
        if not self.declared:
            return
        queue = state.get("queues", {}).get(TTL_QUEUE)
        elements = [] if queue is None else queue[2]
        if elements != [v for v, _ in self.q]:
            raise Violation(f"{TTL_QUEUE} holds {elements!r:.100}, the model "
                            f"{[v for v, _ in self.q]!r:.100}")
        record = state.get("expiry", {}).get("queue", {}).get(TTL_QUEUE)
        counted = 0 if record is None else record[2]
        if counted != self.expired:
            raise Violation(f"{TTL_QUEUE} counted {counted} expired elements, the model "
                            f"{self.expired}")
