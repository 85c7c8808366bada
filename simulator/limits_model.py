"""Queues with limits in the simulation: a client that pushes values of several sizes to
a ``reject`` queue and a ``drop_oldest`` queue and pops from both, and the model the
checker replays them through.

The model keeps each queue's elements and applies the limits by its own rules (sizes
are UTF-8 bytes: the values are strings). Every push's and pop's committed result must
be the model's; the properties:

- a ``reject`` queue never holds more than its limits (elements or bytes): a push that
  would break one is refused (``Full``), and every push the model accepts was accepted;
- a ``drop_oldest`` queue drops only its oldest elements, only as many as the push
  needs, each counted: the replicas' dropped count is the model's, and every push a
  client saw acknowledged was popped, is still queued, or was dropped by the policy
  (never lost otherwise);
- once the load stops every replica holds the model's elements and counts.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError

from .client import OK, Client, Host, Observed
from .history import AppliedOp, Violation

#: name -> [max_length, max_bytes, overflow]
LIMITED: dict[str, list[Any]] = {"lr": [4, 64, "reject"], "ld": [3, 40, "drop_oldest"]}
#: The ops the model answers on those queues.
OPS = frozenset({C.QUEUE_DECLARE_LIMITED, C.QUEUE_PUSH, C.QUEUE_POP, C.QUEUE_POP_STAMPED})


class LimitedQueue:
    """One queue of the model."""

    def __init__(self, max_length: int, max_bytes: int, overflow: str) -> None:
        self.max_length, self.max_bytes, self.overflow = max_length, max_bytes, overflow
        self.items: deque[str] = deque()
        self.dropped: list[str] = []
        self.popped: list[str] = []

    def held(self) -> int:
        return sum(len(v.encode()) for v in self.items)

    def push(self, value: str) -> QueuePushError | None:
        size = len(value.encode())
        if size > self.max_bytes:
            return QueuePushError.Full
        if self.overflow == "reject":
            if len(self.items) >= self.max_length or self.held() + size > self.max_bytes:
                return QueuePushError.Full
        else:
            while len(self.items) >= self.max_length or self.held() + size > self.max_bytes:
                self.dropped.append(self.items.popleft())
        self.items.append(value)
        if len(self.items) > self.max_length or self.held() > self.max_bytes:
            raise Violation(f"the model's {self.overflow} queue is past its limits")
        return None


class LimitsModel:
    """The limited queues of the model (module docstring)."""

    def __init__(self) -> None:
        self.queues: dict[str, LimitedQueue] = {}

    @staticmethod
    def handles(op: AppliedOp) -> bool:
        return op.code in OPS and bool(op.args) and op.args[0] in LIMITED

    def apply(self, op: AppliedOp) -> None:
        name = op.args[0]
        q = self.queues.get(name)
        if op.code == C.QUEUE_DECLARE_LIMITED:
            if op.args[1] != LIMITED[name]:
                raise Violation(f"index {op.index}: {name} declared with {op.args[1]!r}")
            if q is None:
                self.queues[name] = LimitedQueue(*LIMITED[name])
            op.expect(None)
            return
        if q is None:
            op.expect(OpError("unknown_queue", f"queue {name!r} has not been declared"))
            return
        if op.code == C.QUEUE_PUSH:
            op.expect(q.push(op.args[1]))
            return
        n = op.args[1] if op.code == C.QUEUE_POP_STAMPED else 1
        if not q.items:
            if not isinstance(op.result, QueuePopError):
                raise Violation(f"index {op.index}: pop of empty {name} returned {op.result!r}")
            return
        taken = [q.items.popleft() for _ in range(min(n, len(q.items)))]
        q.popped.extend(taken)
        if op.code == C.QUEUE_POP:
            op.expect(taken[0])
        elif not isinstance(op.result, list) or op.result[0] != taken:
            op.expect([taken, "(their id runs)"])

    def check_acknowledged(self, acked: list[tuple[str, str]]) -> None:
        """Every push a client saw accepted was popped, is queued or was dropped."""
        for name, value in acked:
            q = self.queues.get(name)
            if q is None or (value not in q.popped and value not in q.items
                             and value not in q.dropped):
                raise Violation(f"acknowledged push {value!r} to {name} was lost outside "
                                "the overflow policy")

    def check_final(self, state: dict[str, Any]) -> None:
        queues = state.get("queues", {})
        limits = (state.get("limits") or {}).get("queues", {})
        for name, q in self.queues.items():
            held = queues.get(name)
            elements = [] if held is None else held[2]
            if elements != list(q.items):
                raise Violation(f"{name} holds {elements!r:.100}, the model {list(q.items)!r:.100}")
            entry = limits.get(name)
            if entry is None or entry[0] != LIMITED[name]:
                raise Violation(f"{name}: a replica lost its limits ({entry!r})")
            dropped = entry[1].get("drop_oldest", 0)
            if dropped != len(q.dropped):
                raise Violation(f"{name}: a replica counts {dropped} dropped, the model "
                                f"{len(q.dropped)}")


class LimitedClient(Client):
    """Declares the limited queues, then pushes values of 1 to 30 bytes to either and
    pops from either (a third of its ops)."""

    kind = "limited"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.n = 0
        self.todo = [name for name in sorted(LIMITED)]

    def next_op(self) -> None:
        if self.todo:
            name = self.todo[0]
            self.call(C.QUEUE_DECLARE_LIMITED, [name, LIMITED[name]], self._declared)
            return
        if self.draining:
            self.stopped = True
            return
        name = self.rng.choice(sorted(LIMITED))
        if self.rng.random() < 1 / 3:
            self.call(C.QUEUE_POP_STAMPED, [name, self.rng.randrange(1, 3)],
                      lambda _obs: None)
            return
        self.n += 1
        value = f"{self.cid}:{self.n}:" + "x" * self.rng.randrange(0, 24)
        self.call(C.QUEUE_PUSH, [name, value], lambda _obs: None)

    def _declared(self, obs: Observed) -> None:
        if obs.outcome == OK and obs.result is None and self.todo:
            self.todo.pop(0)

    @property
    def settled(self) -> bool:
        return not self.todo and super().settled

    def acknowledged(self) -> list[tuple[str, str]]:
        return [(obs.args[0], obs.args[1]) for obs in self.ops
                if obs.code == C.QUEUE_PUSH and obs.outcome == OK and obs.result is None]
