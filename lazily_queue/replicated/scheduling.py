"""Replicated work-queue scheduling: retry policies, priority and delayed pushes, delayed
nacks and the promotion of due items (op codes 100..103).

Every time here is the leader's stamp on the batch (``sm.now``, milliseconds since the
Unix epoch) unless the op carries an explicit ``now``: a push delayed by ``delay_ms`` is
due at ``now + delay_ms``, a ``not_before_ms`` is an epoch time in milliseconds. A
delayed item becomes claimable when a claim runs at or after its due time, or when the
leader's maintenance, seeing the leader's clock past the earliest due time, proposes
``WORK_PROMOTE`` ``[name]``, which promotes at the entry's stamp (it carries no time; no
client may propose it). Either is an applied op, so every member changes at the same
entry and its waiting consumers wake from the change report. The schedule of a work queue
is part of its core's snapshot (key ``schedule``; its retry policy: ``retry``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..core.scheduling import RetryPolicy, check_priority
from ..errors import InvalidSchedule, shown
from . import ops
from .family import Family, checked_name
from .ops import OpRefused
from .work_queues import _changed, _settle, _time, _work, declared

if TYPE_CHECKING:
    from .state_machine import StateMachine


def _ms(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or value < 0):
        raise OpRefused("bad_schedule", f"{what} must be a number of ms >= 0, got {shown(value)}")
    return int(value)


def declare_retry(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, visibility_timeout_ms, max_deliveries, retry]``:
    :func:`.work_queues.declared` with a retry policy (in ms) and no limits."""
    if len(args) != 4:
        raise OpRefused("bad_args", "work_declare_retry is [name, visibility_timeout_ms, "
                        "max_deliveries, retry]")
    name = checked_name(args[0])
    try:
        retry = RetryPolicy.from_list(args[3])
    except InvalidSchedule as exc:
        raise OpRefused("bad_config", str(exc)) from exc
    declared(sm, name, args[1], args[2], retry)
    return None


def push_scheduled(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, priority, delay_ms, not_before_ms, now, value]``: ``[item_id, mask]``."""
    name, state = _work(sm, args)
    if state.group is not None:
        raise OpRefused("group_push", f"{shown(name)} is group {shown(state.group[1])} of topic "
                        f"{shown(state.group[0])}, fed by the topic: publish to the topic")
    try:
        priority = check_priority(args[1])
    except InvalidSchedule as exc:
        raise OpRefused("bad_schedule", str(exc)) from exc
    delay, not_before = _ms(args[2], "delay"), _ms(args[3], "not_before")
    now = _time(sm, args[4])
    due = now + delay if delay is not None else not_before
    item_id, mask = state.core.push_scheduled(args[5], sm.now, priority=priority, due=due,
                                              now=now)
    _changed(sm, name, mask)
    return [item_id, mask]


def nack_delayed(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, worker, delivery_id, delay_ms, now | None]``: as ``WORK_NACK``, the item
    claimable again ``delay_ms`` after ``now`` (the leader's stamp when ``None``)."""
    delay = _ms(args[3], "delay")
    return _settle(sm, args[:3], "nacked", delay, _time(sm, args[4]))


def promote(sm: StateMachine, args: list[Any]) -> Any:
    """``[name]``: ``[promoted, mask]``, the items due at the entry's stamp."""
    if len(args) != 1:
        raise OpRefused("bad_args", "work_promote is [name] (it promotes at the entry's "
                        "stamp; it carries no time)")
    name, state = _work(sm, args)
    moved, mask = state.core.promote_due(sm.now)
    _changed(sm, name, mask)
    return [moved, mask]


FAMILY = Family(
    "scheduling",
    {
        ops.WORK_DECLARE_RETRY: declare_retry,
        ops.WORK_PUSH_SCHEDULED: push_scheduled,
        ops.WORK_NACK_DELAYED: nack_delayed,
        ops.WORK_PROMOTE: promote,
    },
)
