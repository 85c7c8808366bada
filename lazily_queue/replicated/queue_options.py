"""Queue pushes with options combined, and delayed queue elements (op codes 120..121).

- ``QUEUE_PUSH_OPTIONS`` ``[name, options, value]``: one push whose ``options`` map
  holds only the options given (:class:`~..core.push_options.PushOptions`: ``msg_id``,
  ``headers``, ``ttl_ms``, ``delay_ms``, ``not_before_ms``), decoded strictly (an unknown
  key or a bad value is refused with ``bad_options``, nothing applied). Every option
  combines on one element: deduplicated by its ``msg_id`` (one window with
  ``QUEUE_PUSH_ONCE``), carrying its ``headers`` by its id, its deadline the entry's
  stamp plus ``ttl_ms``, and, delayed, poppable from the entry's stamp plus ``delay_ms``
  (or from ``not_before_ms``, epoch ms). A plain push keeps ``QUEUE_PUSH``.
- ``QUEUE_PROMOTE`` ``[name, now_ms | None]``: make the delayed elements due at ``now``
  (the entry's stamp when ``None``) poppable; the leader's maintenance proposes it once
  the leader's clock passes the earliest due time, and every pop does it first, so every
  member changes at the same entry and its waiting poppers wake from the change report.

Snapshot section ``queue_options``: ``{name: [[due, id, stamp, value], ...]}``, the
delayed elements of each queue holding some, restored after the queues, their ids and
limits and before the headers (a snapshot without it has no delayed elements).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.fifo import Fifo
from ..core.limited_fifo import LimitedFifo
from ..core.queue import DELAY, POP, PUSH
from . import expiry, ops
from .dedup import applied_once
from .events import QueueChanged
from .family import Family, Section, checked_name
from .ops import OpRefused
from .options import decode_options
from .queues import _queue, promote
from .work_queues import _time

if TYPE_CHECKING:
    from .state_machine import StateMachine


def push(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, options, value]``: ``None``, or the push's ``Closed`` / ``Full``."""
    if len(args) != 3:
        raise OpRefused("bad_args", "queue_push_options is [name, options, value]")
    name, raw, value = args
    options = decode_options(ops.QUEUE_PUSH_OPTIONS, raw)
    q = _queue(sm, name)
    if q.delayed_len():
        promote(sm, name, q)

    def apply() -> Any:
        pre = q.len()
        due = options.due_ms(sm.now)
        if due is not None and due <= sm.now:
            due = None  # due already: a ready push
        err = q.push_headers(value, sm.now, options.headers, due)
        if err is not None:
            return err
        if options.ttl_ms is not None:
            rules = expiry.of(sm, "queue", name, True)
            assert rules is not None
            rules.note(q.next_id() - 1, sm.now, options.ttl_ms)
        if due is not None:
            sm.emit(QueueChanged(name, DELAY, pre))
        else:
            report_push(sm, name, q, pre)
        return None

    return applied_once(sm, "queue", name, options.msg_id, apply)


def report_push(sm: StateMachine, name: str, q: Fifo[Any], pre: int) -> None:
    """Report a push to ``q`` from length ``pre``, after the pops of what ``drop_oldest``
    dropped to make room for it."""
    dropped = q.last_dropped if type(q) is LimitedFifo else 0
    for gone in range(dropped):
        sm.emit(QueueChanged(name, POP, pre - gone))
    sm.emit(QueueChanged(name, PUSH, pre - dropped))


def promote_op(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, now_ms | None]``: how many elements fell due."""
    if len(args) != 2:
        raise OpRefused("bad_args", "queue_promote is [name, now_ms]")
    name = checked_name(args[0])
    return promote(sm, name, _queue(sm, name), _time(sm, args[1]))


def due(sm: StateMachine, now: int) -> list[str]:
    """The queues holding a delayed element due at ``now`` (what a ``QUEUE_PROMOTE``
    would move)."""
    return [name for name, q in sm.queues.items()
            if (at := q.next_due()) is not None and at <= now]


def _capture(sm: StateMachine) -> dict[str, Any] | None:
    doc = {name: q.delayed_state() for name, q in sm.queues.items() if q.delayed_len()}
    return doc or None


def _restore(sm: StateMachine, doc: Any) -> None:
    if doc is not None and not isinstance(doc, dict):
        raise ValueError("snapshot section 'queue_options' must map queue names to "
                         "[[due, id, stamp, value], ...]")
    delayed: dict[str, Any] = doc or {}
    for name, q in sm.queues.items() if delayed else ():
        try:
            q.load_delayed(delayed.get(name, []))
        except ValueError as exc:
            raise ValueError(f"snapshot section 'queue_options': queue {name!r}: {exc}") from None


FAMILY = Family("queue_options", {
    ops.QUEUE_PUSH_OPTIONS: push,
    ops.QUEUE_PROMOTE: promote_op,
}, (Section("queue_options", _capture, _restore),))
