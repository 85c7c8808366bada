"""Deduplicated pushes: ``QUEUE_PUSH_ONCE``, ``TOPIC_PUBLISH_ONCE``, ``WORK_PUSH_ONCE``.

Each is ``[name, msg_id, value]`` and applies its plain push (``[name, value]``) unless
the key ``(family, name, msg_id)`` is in the state machine's dedup window
(:class:`~lazily_queue.core.dedup.DedupWindow`), in which case it applies nothing and
returns the first push's result. Only a push that applied is recorded. The window's age
runs on the leader's stamp, so every replica forgets an id at the same entry; it is part
of the snapshot (section ``dedup``, left out while empty, so a snapshot without it loads
with an empty window).

The window's bounds are replicated state too: they start at the defaults and change only
by ``DEDUP_LIMITS`` (``[max_entries, max_age_ms]``), which a leader proposes when its own
configured bounds differ (section ``dedup_limits``, left out at the defaults). Members
configured differently therefore never disagree on what the window holds; the cluster
follows the bounds of its most recent leader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.dedup import MAX_MSG_ID_CHARS, DedupLimits
from ..core.queue import QueuePushError
from ..errors import InvalidConfiguration
from . import ops
from .family import Family, Handler, Section, checked_name
from .ops import OpError, OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine

DedupKey = tuple[str, str, str]

_REFUSED = (QueuePushError, OpError)


def checked_msg_id(msg_id: object) -> str:
    """``msg_id`` when it is a valid message id, else the op is refused (``bad_msg_id``)."""
    if type(msg_id) is not str or not 0 < len(msg_id) <= MAX_MSG_ID_CHARS:
        raise OpRefused("bad_msg_id", f"msg_id must be a non-empty str of at most "
                        f"{MAX_MSG_ID_CHARS} characters")
    return msg_id


def applied_once(sm: StateMachine, family: str, name: str, msg_id: object,
                 apply: Callable[[], Any]) -> Any:
    """``apply()``, once per ``(family, name, msg_id)`` in the window: a repeat answers
    with the first result (a refused op is not remembered); a ``None`` id always applies."""
    if msg_id is None:
        return apply()
    key: DedupKey = (family, name, checked_msg_id(msg_id))
    found, first = sm.dedup.lookup(key, sm.now)
    if found:
        return first
    result = apply()
    if not isinstance(result, _REFUSED):
        sm.dedup.record(key, result, sm.now)
    return result


def _once(code: int) -> Handler:
    plain = ops.ONCE_OPS[code]
    family = ops.family_of(code) or ""

    def apply(sm: StateMachine, args: list[Any]) -> Any:
        if len(args) != 3:
            raise OpRefused("bad_args", f"{ops.op_name(code)} is [name, msg_id, value]")
        name, value = checked_name(args[0]), args[2]
        # Applied (and reported to mirrors) as the plain op; a duplicate reports nothing.
        return applied_once(sm, family, name, checked_msg_id(args[1]),
                            lambda: sm.apply_plain(plain, [name, value]))

    return apply


def _capture(sm: StateMachine) -> list[list[Any]] | None:
    if not len(sm.dedup):
        return None
    return [[*key, result, at] for key, result, at in sm.dedup.items()]


def _restore(sm: StateMachine, doc: Any) -> None:
    entries: list[tuple[DedupKey, Any, int]] = []
    for raw in doc or ():
        if (type(raw) is not list or len(raw) != 5
                or not all(type(v) is str for v in raw[:3]) or type(raw[4]) is not int):
            raise ValueError("snapshot section 'dedup': an entry is [family, name, msg_id, "
                             f"result, time_ms], not {str(raw)[:80]}")
        entries.append(((raw[0], raw[1], raw[2]), raw[3], raw[4]))
    sm.dedup.replace(entries)


def limits_args(limits: DedupLimits) -> list[int]:
    """The ``DEDUP_LIMITS`` arguments that set ``limits``."""
    return [limits.max_entries, limits.max_age_ms]


def _parse_limits(args: Any) -> DedupLimits:
    if (type(args) is not list or len(args) != 2
            or not all(type(v) is int for v in args)):
        raise ValueError(f"dedup limits are [max_entries, max_age_ms], not {str(args)[:80]}")
    try:
        return DedupLimits(args[0], args[1] / 1000)
    except InvalidConfiguration as exc:
        raise ValueError(str(exc)) from None


def _set_limits(sm: StateMachine, args: list[Any]) -> None:
    try:
        limits = _parse_limits(args)
    except ValueError as exc:
        raise OpRefused("bad_args", str(exc)) from None
    sm.dedup.limits = limits
    sm.dedup.replace(list(sm.dedup.items()))
    sm.dedup.expire(sm.now)


def _capture_limits(sm: StateMachine) -> list[int] | None:
    limits = sm.dedup.limits
    return None if limits == DedupLimits() else limits_args(limits)


def _restore_limits(sm: StateMachine, doc: Any) -> None:
    if doc is None:
        sm.dedup.limits = DedupLimits()
        return
    try:
        sm.dedup.limits = _parse_limits(doc)
    except ValueError as exc:
        raise ValueError(f"snapshot section 'dedup_limits': {exc}") from None


FAMILY = Family(
    "dedup",
    {**{code: _once(code) for code in ops.ONCE_OPS}, ops.DEDUP_LIMITS: _set_limits},
    (Section("dedup_limits", _capture_limits, _restore_limits),
     Section("dedup", _capture, _restore)),
)
