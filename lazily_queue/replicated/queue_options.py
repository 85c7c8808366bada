"""Queue pushes with options combined, and delayed queue elements (op codes 120..121).

- ``QUEUE_PUSH_OPTIONS`` ``[name, options, value]``: one push whose ``options`` map
  holds only the options given (:class:`~..core.push_options.PushOptions`: ``msg_id``,
  ``headers``, ``ttl_ms``, ``delay_ms``, ``not_before_ms``), decoded strictly (an unknown
  key or a bad value is refused with ``bad_options``, nothing applied). Every option
  combines on one element: deduplicated by its ``msg_id`` (one window with
  ``QUEUE_PUSH_ONCE``), carrying its ``headers`` by its id, its deadline the entry's
  stamp plus ``ttl_ms``, and, delayed, poppable from the entry's stamp plus ``delay_ms``
  (or from ``not_before_ms``, epoch ms). A plain push keeps ``QUEUE_PUSH``.
- ``QUEUE_PROMOTE`` ``[name]``: make the delayed elements due at the entry's stamp
  poppable (it carries no time of its own); the leader's maintenance proposes it once
  the leader's clock passes the earliest due time, and every pop does it first, so every
  member changes at the same entry and its waiting poppers wake from the change report.

Snapshot section ``queue_options``: ``{name: [[due, id, stamp, value], ...]}``, the
delayed elements of each queue holding some, restored after the queues, their ids and
limits and before the headers (a snapshot without it has no delayed elements).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.queue import DELAY
from ..errors import shown
from . import expiry, ops
from .dedup import applied_once
from .events import QueueChanged
from .family import Family, Section, checked_name
from .ops import OpRefused
from .options import decode_options
from .queues import _queue, promote, report_push

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


def promote_op(sm: StateMachine, args: list[Any]) -> Any:
    """``[name]``: how many elements fell due at the entry's stamp."""
    if len(args) != 1:
        raise OpRefused("bad_args", "queue_promote is [name] (it promotes at the entry's "
                        "stamp; it carries no time)")
    name = checked_name(args[0])
    return promote(sm, name, _queue(sm, name))


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
            raise ValueError(
                f"snapshot section 'queue_options': queue {shown(name)}: {exc}") from None


FAMILY = Family("queue_options", {
    ops.QUEUE_PUSH_OPTIONS: push,
    ops.QUEUE_PROMOTE: promote_op,
}, (Section("queue_options", _capture, _restore),))
