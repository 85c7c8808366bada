"""Limits of replicated cells: queues and topics declared with
:class:`~lazily_queue.core.limits.Limits`.

``QUEUE_DECLARE_LIMITED [name, limits]`` declares a queue whose FIFO is a
:class:`~lazily_queue.core.limited_fifo.LimitedFifo`; a push to it (``QUEUE_PUSH`` and
everything that applies one) is checked against the limits when it applies, in log
order, so every replica refuses or drops the same elements. Declaring an existing queue
with other limits (or a queue declared without limits) is refused with
``limits_mismatch``: limits are fixed at declaration (delete the queue to change them).

``TOPIC_DECLARE_LIMITED [name, limits]`` declares a topic whose retained log is bounded
(:class:`~lazily_queue.core.limited_topic.LimitedTopic`): under ``drop_oldest`` a
publish past a limit drops the oldest retained elements, read or not; under ``reject``
it is refused (``full``) until GC or expiry makes room; the same ``limits_mismatch``
rule applies.

Snapshot section ``limits``: ``{"queues": {name: [limits, {reason: dropped}]},
"topics": {name: [limits, {reason: dropped}, {subscriber: gap}]}}``, restored after the
queues and topics (a snapshot without it leaves them without limits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.limited_fifo import LimitedFifo
from ..core.limited_topic import LimitedTopic, check_topic_limits
from ..core.limited_work import LimitedWorkQueue
from ..core.limits import REJECT, Limits
from ..errors import shown
from . import ops
from .events import QueueDeclared
from .family import Family, Section, checked_name
from .ops import OpRefused
from .work_queues import declared

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
                f"queue {shown(name)} exists with {was}, not {limits.describe()}; limits are "
                "fixed when a queue is declared: open it with the same limits on every "
                "node, or delete it and declare it again")
        return None
    sm.queues[name] = LimitedFifo(limits)
    sm.emit(QueueDeclared(name, limits.max_length if limits.overflow == REJECT else None))
    return None


def declare_topic(sm: StateMachine, args: list[Any]) -> Any:
    if len(args) != 2:
        raise OpRefused("bad_args", "topic_declare_limited is [name, limits]")
    name = checked_name(args[0])
    limits = _limits(args[1])
    try:
        check_topic_limits(limits)
    except ValueError as exc:
        raise OpRefused("bad_limits", str(exc)) from None
    existing = sm.topics.get(name)
    if existing is not None:
        have = existing.limits() if isinstance(existing, LimitedTopic) else None
        if have != limits:
            was = have.describe() if have is not None else "no limits"
            raise OpRefused(
                "limits_mismatch",
                f"topic {shown(name)} exists with {was}, not {limits.describe()}; limits are "
                "fixed when a topic is declared: open it with the same limits on every "
                "node, or delete it and declare it again")
        return None
    sm.topics[name] = LimitedTopic(limits)
    return None


def declare_work(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, visibility_timeout_ms, max_deliveries, limits]``:
    :func:`.work_queues.declared` with limits and no retry policy."""
    if len(args) != 4:
        raise OpRefused("bad_args", "work_declare_limited is [name, visibility_timeout_ms, "
                        "max_deliveries, limits]")
    name = checked_name(args[0])
    declared(sm, name, args[1], args[2], limits=_limits(args[3]))
    return None


def _capture(sm: StateMachine) -> dict[str, Any] | None:
    doc: dict[str, Any] = {}
    work = {name: [s.core.limits.doc(), dict(s.core.dropped)]
            for name, s in sm.work_queues.items() if isinstance(s.core, LimitedWorkQueue)}
    if work:
        doc["work_queues"] = work
    queues = {name: [q.limits().doc(), dict(q.quota.dropped)]
              for name, q in sm.queues.items() if isinstance(q, LimitedFifo)}
    if queues:
        doc["queues"] = queues
    topics = {name: [t.limits().doc(), dict(t.quota.dropped), dict(t.gaps)]
              for name, t in sm.topics.items() if isinstance(t, LimitedTopic)}
    if topics:
        doc["topics"] = topics
    return doc or None


def _counts(where: str, value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or any(
            type(k) is not str or type(v) is not int or v < 0 for k, v in value.items()):
        raise ValueError(f"snapshot section 'limits': {where} must map names to counts")
    return dict(value)


def _restore_topics(sm: StateMachine, topics: Any) -> None:
    if not isinstance(topics, dict):
        raise ValueError("snapshot section 'limits': topics must map names to entries")
    for name, entry in topics.items():
        t = sm.topics.get(name)
        if t is None:
            continue
        if type(entry) is not list or len(entry) != 3:
            raise ValueError(f"snapshot section 'limits': topic {shown(name)} is not "
                             "[limits, dropped, gaps]")
        limited = LimitedTopic.limited(t, check_topic_limits(Limits.from_doc(entry[0])))
        limited.quota.dropped = _counts(f"topic {shown(name)}", entry[1])
        limited.keep_gaps(_counts(f"topic {shown(name)}", entry[2]))
        sm.topics[name] = limited


def _restore(sm: StateMachine, doc: Any) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ValueError("snapshot section 'limits' must be a map")
    _restore_topics(sm, doc.get("topics", {}))
    work = doc.get("work_queues", {})
    if not isinstance(work, dict):
        raise ValueError("snapshot section 'limits': work_queues must map names to entries")
    for name, entry in work.items():
        state = sm.work_queues.get(name)
        if state is None:
            continue
        if type(entry) is not list or len(entry) != 2:
            raise ValueError(f"snapshot section 'limits': work queue {shown(name)} is not "
                             "[limits, dropped]")
        work_queue = LimitedWorkQueue.limited(state.core, Limits.from_doc(entry[0]))
        work_queue.dropped = _counts(f"work queue {shown(name)}", entry[1])
        state.core = work_queue
    queues = doc.get("queues", {})
    if not isinstance(queues, dict):
        raise ValueError("snapshot section 'limits' must be {'queues': {name: [limits, "
                         "dropped]}}")
    for name, entry in queues.items():
        q = sm.queues.get(name)
        if q is None:
            continue
        if type(entry) is not list or len(entry) != 2 or not isinstance(entry[1], dict) or any(
                type(k) is not str or type(v) is not int or v < 0 for k, v in entry[1].items()):
            raise ValueError(f"snapshot section 'limits': queue {shown(name)} is not "
                             "[limits, {reason: dropped}]")
        limited = LimitedFifo.limited(q, Limits.from_doc(entry[0]))
        limited.quota.dropped = dict(entry[1])
        sm.queues[name] = limited


FAMILY = Family("limits", {
    ops.QUEUE_DECLARE_LIMITED: declare_queue,
    ops.TOPIC_DECLARE_LIMITED: declare_topic,
    ops.WORK_DECLARE_LIMITED: declare_work,
}, (Section("limits", _capture, _restore),))
