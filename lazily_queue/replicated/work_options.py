"""Work-queue options combined on the replicated log (op codes 130..131).

- ``WORK_PUSH_OPTIONS`` ``[name, options, now | None, value]``: a push with any
  combination of options, the map holding only those given
  (:class:`~..core.work_options.WorkPushOptions`: ``msg_id``, ``headers``, ``ttl_ms``,
  ``delay_ms`` / ``not_before_ms``, ``priority``). The item is pushed at its priority and
  due time (``now + delay_ms`` or ``not_before_ms``; ``now`` is the op's, else the
  leader's stamp), its TTL counted from
  its push (``now``), delayed or not (a delay does not extend it); its headers are kept by item
  id as ``WORK_PUSH_HEADERS`` keeps them; the whole push applies once per ``msg_id`` in
  the dedup window. A malformed map is refused (``bad_options``) before anything
  changes; a push a work queue's limits refuse is refused (``full``).
- ``WORK_DECLARE_OPTIONS`` ``[name, visibility_timeout_ms, max_deliveries, {retry,
  limits}]``: one declaration with every cell option (either key may be left out); an
  existing queue must have the same settings (``config_mismatch``).

Both keep what they change in the existing sections (``work_queues``, ``expiry``,
``headers``, ``limits``, ``dedup``): no new snapshot section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.limits import Limits
from ..core.scheduling import RetryPolicy
from ..errors import InvalidSchedule, LimitExceeded, shown
from . import expiry, ops, work_headers
from .dedup import applied_once
from .family import Family, checked_name
from .ops import OpRefused
from .options import decode_work_options
from .work_queues import _changed, _time, _work, declared

if TYPE_CHECKING:
    from .state_machine import StateMachine


def push(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, options, now | None, value]``: ``[item_id, mask]``."""
    if len(args) != 4:
        raise OpRefused("bad_args", "work_push_options is [name, options, now, value]")
    options = decode_work_options(args[1])
    at = _time(sm, args[2])
    name, state = _work(sm, args)
    if state.group is not None:
        raise OpRefused("group_push", f"{shown(name)} is group {shown(state.group[1])} of topic "
                        f"{shown(state.group[0])}, fed by the topic: publish to the topic")
    due = options.due_ms(at)
    value = args[3]

    def apply() -> Any:
        try:
            item_id, mask = state.core.push_scheduled(value, sm.now, priority=options.level,
                                                      due=due, now=at)
        except LimitExceeded as exc:  # nothing changed
            raise OpRefused("full", f"work queue {shown(name)}: {exc}") from None
        if options.ttl_ms is not None:
            expiry.of(sm, "work_queue", name, True).note(  # type: ignore[union-attr]
                item_id, at, options.ttl_ms)
        if options.headers is not None:
            work_headers.note(sm, name, item_id, options.headers)
        _changed(sm, name, mask)
        return [item_id, mask]

    return applied_once(sm, "work_queue", name, options.msg_id, apply)


def _settings(doc: Any) -> tuple[RetryPolicy | None, Limits | None]:
    if type(doc) is not dict or set(doc) - {"retry", "limits"}:
        raise OpRefused("bad_config", "work queue options are a map of retry and limits")
    try:
        retry = None if doc.get("retry") is None else RetryPolicy.from_list(doc["retry"])
        limits = None if doc.get("limits") is None else Limits.from_doc(doc["limits"])
    except (InvalidSchedule, ValueError, TypeError) as exc:
        raise OpRefused("bad_config", str(exc)) from None
    return retry, limits


def declare(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, visibility_timeout_ms, max_deliveries, {retry, limits}]``:
    :func:`.work_queues.declared` with the whole configuration."""
    if len(args) != 4:
        raise OpRefused("bad_args", "work_declare_options is [name, visibility_timeout_ms, "
                        "max_deliveries, options]")
    name = checked_name(args[0])
    retry, limits = _settings(args[3])
    declared(sm, name, args[1], args[2], retry, limits)
    return None


FAMILY = Family("work_options", {
    ops.WORK_PUSH_OPTIONS: push,
    ops.WORK_DECLARE_OPTIONS: declare,
})
