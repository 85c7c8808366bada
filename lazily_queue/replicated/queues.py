"""Queue operations: declare, push, pop, unpop and close a named FIFO.

A push takes the queue's next message id and the batch's leader stamp as its enqueue
time (:mod:`lazily_queue.core.ids`). ``QUEUE_POP_STAMPED`` answers the ids and stamps of
what it pops, and ``QUEUE_UNPOP_STAMPED`` gives elements back with them, so an element
keeps its id however often it goes back to the head; the older ``QUEUE_UNPOP(_MANY)``
give an element back under a new id, stamped with the entry's time. Snapshot section
``queue_ids``: ``{name: [next_id, runs]}`` (a snapshot without it numbers each queue's
elements from 0, stamp 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import ids
from ..core.fifo import Fifo
from ..core.headers import checked_table
from ..core.limited_fifo import LimitedFifo
from ..core.queue import CLOSE, POP, PUSH, UNPOP, QueuePopError
from ..errors import shown
from . import expiry, ops
from .events import QueueChanged, QueueDeclared
from .family import Family, Section
from .ops import OpRefused
from .take_bytes import HEADERS_ALLOWANCE, NO_ROOM, replayed_as, take_budget

if TYPE_CHECKING:
    from .state_machine import StateMachine


def _queue(sm: StateMachine, name: Any) -> Fifo[Any]:
    q = sm.queues.get(name) if isinstance(name, str) else None
    if q is None:
        raise OpRefused("unknown_queue", f"queue {shown(name)} has not been declared")
    return q


def promote(sm: StateMachine, name: str, q: Fifo[Any]) -> int:
    """Make the delayed elements of ``q`` due at the entry's stamp poppable, reporting
    them as :func:`report_push` does."""
    pre = q.len()
    n = q.promote_due(sm.now)
    if n:
        report_push(sm, name, q, pre, n)
    return n


def report_push(sm: StateMachine, name: str, q: Fifo[Any], pre: int, n: int = 1) -> None:
    """Report ``n`` elements joining ``q`` from length ``pre`` (a push, or elements
    falling due), after the pops of what ``drop_oldest`` dropped to make room for them
    (``last_dropped`` of a limited FIFO)."""
    dropped = q.last_dropped if type(q) is LimitedFifo else 0
    for gone in range(dropped):
        sm.emit(QueueChanged(name, POP, pre - gone))
    pre -= dropped
    for i in range(n):
        sm.emit(QueueChanged(name, PUSH, pre + i))


def declare(sm: StateMachine, args: list[Any]) -> Any:
    name, capacity = args
    if not isinstance(name, str) or not name:
        raise OpRefused("bad_name", f"queue name must be a non-empty string, got {shown(name)}")
    existing = sm.queues.get(name)
    if existing is not None:
        if existing.capacity() != capacity or type(existing) is LimitedFifo:
            raise OpRefused(
                "capacity_mismatch",
                f"queue {shown(name)} exists with capacity {existing.capacity()}, "
                f"not {shown(capacity)}; use the same capacity on every node",
            )
        return None
    try:
        sm.queues[name] = Fifo(capacity)
    except ValueError as exc:
        raise OpRefused("bad_capacity", str(exc)) from exc
    sm.emit(QueueDeclared(name, capacity))
    return None


def push(sm: StateMachine, args: list[Any]) -> Any:
    name = args[0]
    q = sm.queues.get(name) if type(name) is str else None  # _queue's common case
    if q is None:
        q = _queue(sm, name)
    pre = q.len()
    err = q.push_stamped(args[1], sm.now)
    if err is None:
        if type(q) is LimitedFifo:
            report_push(sm, name, q, pre)
        else:
            sm.events.append(QueueChanged(name, PUSH, pre))  # sm.emit inlined
    return err


def pop(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    if q.delayed_len():
        promote(sm, args[0], q)
    if sm.expiry and (rules := expiry.of(sm, "queue", args[0])) is not None:
        taken = expiry.queue_take(sm, args[0], q, rules, 1, False)
        return taken if isinstance(taken, QueuePopError) else taken[0]
    pre = q.len()
    result = q.try_pop()
    if not isinstance(result, QueuePopError):
        sm.emit(QueueChanged(args[0], POP, pre))
    return result


def pop_many(sm: StateMachine, args: list[Any]) -> Any:
    """Up to ``n`` elements in order (:func:`take_count`); an empty queue answers as
    ``pop`` does."""
    q = _queue(sm, args[0])
    if q.delayed_len():
        promote(sm, args[0], q)
    n = take_count(sm, q, _count(args[1]), args)
    if sm.expiry and (rules := expiry.of(sm, "queue", args[0])) is not None:
        return expiry.queue_take(sm, args[0], q, rules, n, False)
    popped: list[Any] = []
    while len(popped) < n:
        pre = q.len()
        result = q.try_pop()
        if isinstance(result, QueuePopError):
            return popped or result
        sm.emit(QueueChanged(args[0], POP, pre))
        popped.append(result)
    return popped


def take_count(sm: StateMachine, q: Fifo[Any], n: int, args: list[Any] | None = None
               ) -> int:
    """How many of the ``n`` oldest elements of ``q`` one take pops: as many as come to
    :data:`~.take_bytes.TAKE_BYTES` (and its session's ``sm.take_room``) at most
    (:func:`~.take_bytes.take_budget`), and at least one (``n`` when ``q`` is empty);
    refused :data:`~.take_bytes.NO_ROOM` when the room holds not even one. A sized take
    writes that count in place of ``n`` in its op's ``args`` (0 when refused), as a
    mirror replays it (:func:`~.take_bytes.replayed_as`)."""
    budget = take_budget(HEADERS_ALLOWANCE if q.holds_headers() else 0, sm.take_room)
    k = budget(q.head(n)) or n
    if sm.take_room is not None and args is not None:
        replayed_as(args, 1, 0 if budget.short else k)  # 0: refused again, bad_count
    if budget.short:
        raise OpRefused(NO_ROOM.code, NO_ROOM.message)
    return k


def _count(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise OpRefused("bad_count", f"n must be an int >= 1, got {shown(n)}")
    return n


def pop_stamped(sm: StateMachine, args: list[Any]) -> Any:
    """``[values, runs]`` of up to ``n`` elements; an empty queue answers as ``pop``."""
    q = _queue(sm, args[0])
    n = _count(args[1])
    if q.delayed_len():
        promote(sm, args[0], q)
    n = take_count(sm, q, n, args)
    if sm.expiry and (rules := expiry.of(sm, "queue", args[0])) is not None:
        return expiry.queue_take(sm, args[0], q, rules, n, True)
    pre = q.len()
    result = q.pop_stamped(n)
    if isinstance(result, QueuePopError):
        return result
    values, runs = result
    for i in range(len(values)):
        sm.emit(QueueChanged(args[0], POP, pre - i))
    return [values, runs]


def unpop_stamped(sm: StateMachine, args: list[Any], *, with_headers: bool = False) -> Any:
    """``[name, values, runs]``: give ``values`` back to the head under the ids and stamps
    their pop gave; ``with_headers``: ``[name, values, runs, headers]``, with the headers
    of those ids that had some."""
    q = _queue(sm, args[0])
    if len(args) != (4 if with_headers else 3) or not isinstance(args[1], list):
        raise OpRefused("bad_values", "queue_unpop_headers is [name, values, runs, headers]"
                        if with_headers else "queue_unpop_stamped is [name, values, runs]")
    values = args[1]
    pre = q.len()
    try:
        q.unpop_stamped(values, args[2],
                        checked_table(args[3], "headers") if with_headers else None)
    except ValueError as exc:
        raise OpRefused("bad_runs", str(exc)) from exc
    if sm.expiry and (rules := expiry.of(sm, "queue", args[0])) is not None:
        expiry.queue_gave_back(rules, args[2])
    for i in range(len(values)):
        sm.emit(QueueChanged(args[0], UNPOP, pre + i))
    return None


def unpop_checked(sm: StateMachine, args: list[Any]) -> Any:
    """A checked give-back outside a client session (:mod:`.session_popped`): refused."""
    raise OpRefused("not_in_session", "a checked give-back applies only in a client session, "
                    "as its record of popped elements allows; nothing was given back")


def unpop(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    q.push_front(args[1], sm.now)  # the entry's time: the same on every replica
    sm.emit(QueueChanged(args[0], UNPOP, pre))
    return None


def unpop_many(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    values = args[1]
    if not isinstance(values, list):
        raise OpRefused("bad_values", f"values must be a list, got {type(values).__name__}")
    for value in reversed(values):
        pre = q.len()
        q.push_front(value, sm.now)
        sm.emit(QueueChanged(args[0], UNPOP, pre))
    return None


def close(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    if not q.is_closed():
        q.try_close()
        sm.emit(QueueChanged(args[0], CLOSE, q.len()))
    return None


def _capture_ids(sm: StateMachine) -> dict[str, list[Any]] | None:
    if not sm.queues:
        return None
    return {name: list(q.id_state()) for name, q in sm.queues.items()}


def _restore_ids(sm: StateMachine, doc: Any) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ValueError("snapshot section 'queue_ids' must map queue names to [next_id, runs]")
    for name, q in list(sm.queues.items()):
        state = doc.get(name)
        if state is None:
            continue
        if type(state) is not list or len(state) != 2:
            raise ValueError(f"snapshot section 'queue_ids': queue {shown(name)} is not "
                             "[next_id, runs]")
        sm.queues[name] = Fifo.restored(q.capacity(), q.elements(), q.is_closed(),
                                        (state[0], ids.checked_runs(state[1])))


FAMILY = Family("queues", {
    ops.QUEUE_DECLARE: declare,
    ops.QUEUE_PUSH: push,
    ops.QUEUE_POP: pop,
    ops.QUEUE_CLOSE: close,
    ops.QUEUE_UNPOP: unpop,
    ops.QUEUE_POP_MANY: pop_many,
    ops.QUEUE_UNPOP_MANY: unpop_many,
    ops.QUEUE_POP_STAMPED: pop_stamped,
    ops.QUEUE_UNPOP_STAMPED: unpop_stamped,
    ops.QUEUE_UNPOP_STAMPED_CHECKED: unpop_checked,
    ops.QUEUE_UNPOP_HEADERS_CHECKED: unpop_checked,
}, (Section("queue_ids", _capture_ids, _restore_ids),))
