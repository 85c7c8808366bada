"""The queue half of the checker: the queue model's replay of the committed queue ops
(FIFO in commit order, a full bounded queue refusing a push, gives-back to the head in
the order given, a pop of an empty queue refused), with each element's message id
(:mod:`.queue_ids`) and headers (:mod:`.headers`) followed alongside."""

from __future__ import annotations

from collections import Counter, deque
from typing import Any, NoReturn

from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError

from .checked_give_backs import GIVE_BACKS
from .client import QUEUE
from .headers import HeaderModel
from .history import AppliedOp
from .queue_ids import QueueIdModel


class QueueChecks:
    """Mixed into :class:`~.checker.Checker` (which sets the attributes below)."""

    queue: deque[Any] | None
    capacity: int | None
    pushed: list[Any]
    pushes: Counter[Any]
    popped: list[Any]
    ids: QueueIdModel
    headers: HeaderModel
    now: int

    def fail(self, text: str) -> NoReturn:
        raise NotImplementedError

    def _queue_op(self, op: AppliedOp) -> None:
        q = self.queue
        if q is None:
            op.expect(OpError("unknown_queue", f"queue {QUEUE!r} has not been declared"))
            return
        if op.code in (C.QUEUE_PUSH, C.QUEUE_PUSH_HEADERS):
            if self.capacity is not None and len(q) >= self.capacity:
                op.expect(QueuePushError.Full)
                return
            value = op.args[-1]
            q.append(value)
            self.pushed.append(value)
            self.ids.push(value, self.now)
            self.pushes[value] += 1
            op.expect(None)
            if op.code == C.QUEUE_PUSH_HEADERS:
                self.headers.pushed(op)
        elif op.code == C.QUEUE_UNPOP:
            q.appendleft(op.args[1])
            self.pushed.append(op.args[1])
            self.ids.unpop_fresh([op.args[1]])
            op.expect(None)
        elif op.code == C.QUEUE_UNPOP_MANY:
            q.extendleft(reversed(op.args[1]))
            self.pushed.extend(op.args[1])
            self.ids.unpop_fresh(op.args[1])
            op.expect(None)
        elif op.code in GIVE_BACKS:
            self.ids.unpop_stamped(op, op.args[1], op.args[2])
            q.extendleft(reversed(op.args[1]))
            self.pushed.extend(op.args[1])
            op.expect(None)
            if op.code in (C.QUEUE_UNPOP_HEADERS, C.QUEUE_UNPOP_HEADERS_CHECKED):
                self.headers.given_back(op)
        elif op.code in (C.QUEUE_POP_MANY, C.QUEUE_POP_STAMPED, C.QUEUE_POP_HEADERS):
            if not q:
                if not isinstance(op.result, QueuePopError):
                    self.fail(f"index {op.index}: pop of an empty queue returned {op.result!r}")
                return
            taken = [q.popleft() for _ in range(min(op.args[1], len(q)))]
            self.popped.extend(taken)
            stamped = op.code != C.QUEUE_POP_MANY
            if stamped:
                if not isinstance(op.result, list) or op.result[0] != taken:
                    op.expect([taken, "(their id runs)"])
            else:
                op.expect(taken)
            self.ids.pop(op, len(taken), self.now, stamped)
            self.headers.popped(op, taken)
        elif q:
            value = q.popleft()
            self.popped.append(value)
            op.expect(value)
            self.ids.pop(op, 1, self.now, False)
            self.headers.popped(op, [value])
        elif not isinstance(op.result, QueuePopError):
            self.fail(f"index {op.index}: pop of an empty queue returned {op.result!r}")
