"""Queue operations: declare, push, pop, unpop and close a named FIFO."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.fifo import Fifo
from ..core.queue import CLOSE, POP, PUSH, UNPOP, QueuePopError
from . import ops
from .events import QueueChanged, QueueDeclared
from .family import Family
from .ops import OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine


def _queue(sm: StateMachine, name: Any) -> Fifo[Any]:
    q = sm.queues.get(name) if isinstance(name, str) else None
    if q is None:
        raise OpRefused("unknown_queue", f"queue {name!r} has not been declared")
    return q


def declare(sm: StateMachine, args: list[Any]) -> Any:
    name, capacity = args
    if not isinstance(name, str) or not name:
        raise OpRefused("bad_name", f"queue name must be a non-empty string, got {name!r}")
    existing = sm.queues.get(name)
    if existing is not None:
        if existing.capacity() != capacity:
            raise OpRefused(
                "capacity_mismatch",
                f"queue {name!r} exists with capacity {existing.capacity()}, "
                f"not {capacity}; use the same capacity on every node",
            )
        return None
    try:
        sm.queues[name] = Fifo(capacity)
    except ValueError as exc:
        raise OpRefused("bad_capacity", str(exc)) from exc
    sm.emit(QueueDeclared(name, capacity))
    return None


def push(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    err = q.try_push(args[1])
    if err is None:
        sm.emit(QueueChanged(args[0], PUSH, pre))
    return err


def pop(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    result = q.try_pop()
    if not isinstance(result, QueuePopError):
        sm.emit(QueueChanged(args[0], POP, pre))
    return result


def pop_many(sm: StateMachine, args: list[Any]) -> Any:
    """Up to ``n`` elements in order; an empty queue answers as ``pop`` does."""
    q = _queue(sm, args[0])
    n = args[1]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise OpRefused("bad_count", f"n must be an int >= 1, got {n!r}")
    popped: list[Any] = []
    while len(popped) < n:
        pre = q.len()
        result = q.try_pop()
        if isinstance(result, QueuePopError):
            return popped or result
        sm.emit(QueueChanged(args[0], POP, pre))
        popped.append(result)
    return popped


def unpop(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    q.push_front(args[1])
    sm.emit(QueueChanged(args[0], UNPOP, pre))
    return None


def unpop_many(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    values = args[1]
    if not isinstance(values, list):
        raise OpRefused("bad_values", f"values must be a list, got {type(values).__name__}")
    for value in reversed(values):
        pre = q.len()
        q.push_front(value)
        sm.emit(QueueChanged(args[0], UNPOP, pre))
    return None


def close(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    if not q.is_closed():
        q.try_close()
        sm.emit(QueueChanged(args[0], CLOSE, q.len()))
    return None


FAMILY = Family("queues", {
    ops.QUEUE_DECLARE: declare,
    ops.QUEUE_PUSH: push,
    ops.QUEUE_POP: pop,
    ops.QUEUE_CLOSE: close,
    ops.QUEUE_UNPOP: unpop,
    ops.QUEUE_POP_MANY: pop_many,
    ops.QUEUE_UNPOP_MANY: unpop_many,
})
