"""Limits of replicated cells: queues declared with :class:`~lazily_queue.core.limits.Limits`.

``QUEUE_DECLARE_LIMITED [name, limits]`` declares a queue whose FIFO is a
:class:`~lazily_queue.core.limited_fifo.LimitedFifo`; a push to it (``QUEUE_PUSH`` and
everything that applies one) is checked against the limits when it applies, in log
order, so every replica refuses or drops the same elements. Declaring an existing queue
with other limits (or a queue declared without limits) is refused with
``limits_mismatch``: limits are fixed at declaration (delete the queue to change them).

Snapshot section ``limits``: ``{"queues": {name: [limits, {reason: dropped}]}}``,
restored after the queues (a snapshot without it leaves the queues without limits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.limited_fifo import LimitedFifo
from ..core.limits import REJECT, Limits
from . import ops
from .events import QueueDeclared
from .family import Family, Section, checked_name
from .ops import OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine


def _limits(doc: Any) -> Limits:
    try:
        return Limits.from_doc(doc)
    except ValueError as exc:
        raise OpRefused("bad_limits", str(exc)) from None


def declare_queue(sm: StateMachine, args: list[Any]) -> Any:
    if len(args) != 2:
        raise OpRefused("bad_args", "queue_declare_limited is [name, limits]")
    name = checked_name(args[0])
    limits = _limits(args[1])
    existing = sm.queues.get(name)
    if existing is not None:
        have = existing.limits() if isinstance(existing, LimitedFifo) else None
        if have != limits:
            was = (have.describe() if have is not None
                   else f"capacity {existing.capacity()} and no other limits")
            raise OpRefused(
                "limits_mismatch",
                f"queue {name!r} exists with {was}, not {limits.describe()}; limits are "
                "fixed when a queue is declared: open it with the same limits on every "
                "node, or delete it and declare it again")
        return None
    sm.queues[name] = LimitedFifo(limits)
    sm.emit(QueueDeclared(name, limits.max_length if limits.overflow == REJECT else None))
    return None


def _capture(sm: StateMachine) -> dict[str, Any] | None:
    queues = {name: [q.limits().doc(), dict(q.quota.dropped)]
              for name, q in sm.queues.items() if isinstance(q, LimitedFifo)}
    return {"queues": queues} if queues else None


def _restore(sm: StateMachine, doc: Any) -> None:
    if doc is None:
        return
    queues = doc.get("queues") if isinstance(doc, dict) else None
    if not isinstance(queues, dict):
        raise ValueError("snapshot section 'limits' must be {'queues': {name: [limits, "
                         "dropped]}}")
    for name, entry in queues.items():
        q = sm.queues.get(name)
        if q is None:
            continue
        if type(entry) is not list or len(entry) != 2 or not isinstance(entry[1], dict) or any(
                type(k) is not str or type(v) is not int or v < 0 for k, v in entry[1].items()):
            raise ValueError(f"snapshot section 'limits': queue {name!r} is not "
                             "[limits, {reason: dropped}]")
        limited = LimitedFifo.limited(q, Limits.from_doc(entry[0]))
        limited.quota.dropped = dict(entry[1])
        sm.queues[name] = limited


FAMILY = Family("limits", {
    ops.QUEUE_DECLARE_LIMITED: declare_queue,
}, (Section("limits", _capture, _restore),))
