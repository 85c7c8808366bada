"""Work items with a TTL in the simulation: a client and the checker's model of them.

:class:`WorkTtlClient` works a work queue of its own (:data:`WORK_TTL`): it pushes
items with a TTL (``WORK_PUSH_TTL``, or ``WORK_PUSH_OPTIONS`` with ``ttl_ms`` and now
and then a delay or a priority), plain items, claims one or a few at once, acks or
nacks what it holds (or abandons it: the lease expires) and sometimes proposes a sweep,
through whichever member it is on, under every fault. The leader's maintenance reaps,
promotes and sweeps it too. The checker replays its ops through
:class:`WorkExpiryModel`, the work-queue model plus the contract's expiry rules: an item
waiting for its first delivery expires from the first entry stamped at or after its
deadline (push stamp plus TTL, a delay not extending it); a claim at stamp ``now``
discards the expired items it meets at the head (counted) and leases live ones only; a
sweep discards the expired ones at the head. Once leased, an item never expires.

The properties, each a failed run when broken: no claim hands out an item at or after
its deadline; every pushed item is acked, dead-lettered, counted expired or still in
the queue (pending, delayed or leased), none lost silently; each replica's queue and
expired count are the model's.
"""

from __future__ import annotations

import random
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.expiry import EXPIRE_LIMIT
from lazily_queue.replicated.ops import OpError

from .client import OK, Client, Host, Observed
from .expiry import sweep_args, sweep_limit
from .history import AppliedOp, Violation
from .work_model import WorkModel

#: The work queue the client works (not the checker's main work queue).
WORK_TTL = "w-ttl"
#: Its lease (ms of leader time) and retry limit.
VISIBILITY_MS, MAX_DELIVERIES = 400, 2
TTLS = (10, 50, 150, 600, 5_000)


class WorkTtlClient(Client):
    """Declares :data:`WORK_TTL`, then pushes (mostly with a TTL), claims, settles and
    sometimes sweeps (see the module docstring)."""

    kind = "work-ttl-client"
    #: The work queue it claims from.
    queue = WORK_TTL

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.todo: list[tuple[int, list[Any]]] = self.declarations()
        self.n = 0
        self.held: list[int] = []

    def declarations(self) -> list[tuple[int, list[Any]]]:
        """The ops it makes succeed, in order, before any other."""
        return [(C.WORK_DECLARE, [WORK_TTL, VISIBILITY_MS, MAX_DELIVERIES])]

    def next_op(self) -> None:
        if self.draining or self.todo:
            self.stopped = not self.todo  # draining stops it once it has declared
            if self.todo:
                code, args = self.todo[0]
                self.call(code, args, self._declared)
            return
        rng = self.rng
        if self.held and rng.random() < 0.5:
            did = self.held.pop(0)
            roll = rng.random()
            if roll < 0.1:
                return self.next_op()  # abandoned: the lease expires
            code = C.WORK_NACK if roll < 0.3 else C.WORK_ACK
            self.call(code, [self.queue, self.cid, did], _ignore)
            return
        roll = rng.random()
        if roll < 0.45:
            self.n += 1
            self.push(f"{self.cid}:{self.n}")
        elif roll < 0.9:
            if rng.random() < 0.3:
                self.call(C.WORK_CLAIM_MANY, [self.queue, self.cid, rng.randint(2, 4), None],
                          self._claimed)
            else:
                self.call(C.WORK_CLAIM, [self.queue, self.cid, None], self._claimed)
        else:
            self.call(C.EXPIRE, sweep_args(self.queue, "work_queue", len(self.ops)), _ignore)

    def push(self, value: str) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            self.call(C.WORK_PUSH_TTL, [WORK_TTL, rng.choice(TTLS), value], _ignore)
        elif roll < 0.8:
            options: dict[str, Any] = {"ttl_ms": rng.choice(TTLS)}
            if rng.random() < 0.4:
                options["delay_ms"] = rng.choice([5, 40, 200])
            if rng.random() < 0.3:
                options["priority"] = rng.randint(1, 3)
            self.call(C.WORK_PUSH_OPTIONS, [WORK_TTL, options, None, value], _ignore)
        else:
            self.call(C.WORK_PUSH, [WORK_TTL, value], _ignore)

    def _declared(self, obs: Observed) -> None:
        if obs.outcome == OK and obs.result in (None, ["ok", None]) and self.todo:
            self.todo.pop(0)

    def _claimed(self, obs: Observed) -> None:
        if obs.outcome != OK or not isinstance(obs.result, list):
            return
        got = obs.result[0]
        for delivery in got if isinstance(got, list) else [got]:
            if isinstance(delivery, dict):
                self.held.append(int(delivery["delivery_id"]))


def _ignore(_obs: Observed) -> None:
    return None


class WorkExpiryModel(WorkModel):
    """:data:`WORK_TTL` (or another work queue ``name``) as the contract states it
    (module docstring)."""

    def __init__(self, name: str = WORK_TTL, visibility: int = VISIBILITY_MS,
                 max_deliveries: int = MAX_DELIVERIES) -> None:
        super().__init__(visibility, max_deliveries)
        self.name = name
        self.declared = False
        #: The first item's id (a group's: the topic offset it starts at).
        self.first = 0
        #: The deadline of each item that has one and was never leased.
        self.deadlines: dict[int, int] = {}
        #: Items that expired undelivered, in order.
        self.expired: list[int] = []
        #: Items with a deadline leased while live.
        self.delivered = 0

    def apply(self, op: AppliedOp, now: int) -> None:
        """Apply ``op`` (on the queue) at leader time ``now``, checking its result."""
        code, args = op.code, op.args
        if code == C.WORK_DECLARE:
            self.declared = True
            op.expect(None)
            return
        if not self.declared:
            if not isinstance(op.result, OpError) and code != C.EXPIRE:
                raise Violation(f"index {op.index}: {C.op_name(code)} on {self.name} before "
                                "its declaration succeeded")
            return
        if code == C.WORK_PUSH_TTL:
            item = self.next_item
            super().apply(AppliedOp(op.index, op.session, op.seq, C.WORK_PUSH,
                                    [args[0], args[2]], op.result, op.stamp), now)
            self.deadlines[item] = now + args[1]
        elif code == C.WORK_PUSH_OPTIONS:
            item = self.next_item
            super().apply(op, now)
            ttl = args[1].get("ttl_ms")
            if ttl is not None and self.next_item > item:
                self.deadlines[item] = (now if args[2] is None else int(args[2])) + ttl
        elif code == C.EXPIRE:
            op.expect(self._expire_head(now, sweep_limit(args)))
        elif code in (C.WORK_CLAIM, C.WORK_CLAIM_MANY):
            self._claim(op, now)
        else:
            super().apply(op, now)

    def _head(self) -> tuple[int, str, int] | None:
        for level in sorted(self.levels, reverse=True):
            if self.levels[level]:
                return self.levels[level][0]
        return self.pending[0] if self.pending else None

    def _expired_head(self, now: int) -> tuple[int, str, int] | None:
        """The head when it was never delivered and its deadline is past."""
        head = self._head()
        if head is not None and head[2] == 0 and self.deadlines.get(head[0], now + 1) <= now:
            return head
        return None

    def _expire_head(self, now: int, limit: int | None = None) -> int:
        """Discard the never-delivered items at the head whose deadline is past, at most
        ``limit`` (``None``: all)."""
        n = 0
        while (limit is None or n < limit) and (head := self._expired_head(now)) is not None:
            self._take()
            del self.deadlines[head[0]]
            self.priority.pop(head[0], None)
            self.due.pop(head[0], None)
            self.expired.append(head[0])
            n += 1
        return n

    def _claim(self, op: AppliedOp, now: int) -> None:
        many = op.code == C.WORK_CLAIM_MANY
        result = op.result
        got = result[0] if isinstance(result, list) and len(result) == 2 else "?"
        deliveries = got if many else ([] if got is None else [got])
        if not isinstance(deliveries, list):
            raise Violation(f"index {op.index}: claim of {self.name} returned {result!r:.120}")
        for delivery in deliveries:
            if not isinstance(delivery, dict):
                continue
            deadline = self.deadlines.get(delivery.get("item_id"))  # type: ignore[arg-type]
            if deadline is not None and delivery.get("attempt") == 1 and now >= deadline:
                raise Violation(f"index {op.index}: a claim at {now} handed out item "
                                f"{delivery['item_id']} of {self.name}, expired at {deadline}")
        self._promote(now)
        want = op.args[2] if many else 1
        taken, left = 0, EXPIRE_LIMIT
        while taken < want:
            left -= self._expire_head(now, left)
            if not self._ready() or self._expired_head(now) is not None:
                break
            if taken >= len(deliveries):
                raise Violation(f"index {op.index}: a claim at {now} of {self.name} returned "
                                f"{len(deliveries)} item(s), the model has a live item "
                                f"{self._head()}")
            item = self._head()
            assert item is not None
            if self.deadlines.pop(item[0], None) is not None:
                self.delivered += 1
            self._lease(op, op.args[1], deliveries[taken], now)
            taken += 1
        if taken != len(deliveries):
            raise Violation(f"index {op.index}: a claim at {now} of {self.name} returned "
                            f"{len(deliveries)} item(s), the model leases {taken}")

    def check_final(self, state: dict[str, Any]) -> None:
        """A replica's queue and expired count are the model's, and every item pushed
        is accounted for (acked, dead, expired, or still held)."""
        if not self.declared:
            return
        name = self.name
        work = state.get("work_queues", {}).get(name)
        if work is None:
            raise Violation(f"{name} is missing from the replica's state")
        self.check_state(work["core"])
        record = state.get("expiry", {}).get("work_queue", {}).get(name)
        counted = 0 if record is None else record[2]
        if counted != len(self.expired):
            raise Violation(f"{name} counted {counted} expired items, the model "
                            f"{len(self.expired)}")
        held = [*(p[0] for p in self.pending), *(i[0] for q in self.levels.values() for i in q),
                *(e[2][0] for e in self.delayed), *(d[0] for d in self.live.values())]
        every = sorted([*self.acked, *self.dead, *self.expired, *held])
        if every != list(range(self.first, self.next_item)):
            lost = sorted(set(range(self.first, self.next_item)) - set(every))
            raise Violation(f"{name}: items not accounted for once (acked, dead, "
                            f"expired or held): lost {lost[:10]}, of {self.next_item}")
