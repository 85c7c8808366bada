"""Consumer groups on every replica: work queues their topic feeds as it publishes.

A group's state is a work queue (:class:`~.work_queues.WorkState`) named
``"<topic>:<group>"`` (:func:`~lazily_queue.core.groups.group_queue_name`), so every
work-queue op, receipt, event, reap, status line and snapshot entry applies to it
unchanged; its ``group`` marks it as one. ``GROUP_DECLARE`` makes it (and the topic,
if new) and feeds it the retained elements from its start; each ``TOPIC_PUBLISH``
then pushes the element into every group of the topic in the same step. A group is
fed only by its topic: a push to its work queue is refused, and so is declaring a
plain work queue by its name. Deleting the topic deletes its groups.

An element of a topic with expiry (a per-message ttl, the topic's ttl or max_age) enters
each group with its deadline (:func:`~lazily_queue.core.groups.fed_deadline`), kept in
the group's work-queue expiry record (``expiry`` section, kind ``work_queue``): the
work-queue claims and sweeps then skip, discard and count it as they do any work item's.

A group's work queue in the state machine's ``tap`` (a client mirrors it) is reported
as its own ops would be: each element its topic feeds it as a ``WORK_PUSH`` of it
(``WORK_PUSH_TTL`` with the time left to its deadline when it has one), its deletion
with the topic as a ``WORK_DELETE``, and its declaration as
:class:`~.events.Replaced` (the member sends the mirror the group as it stands).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.groups import fed_deadline, group_queue_name, new_group, note_retained
from ..core.topic import TopicCore, check_start
from ..core.work_masks import ALL_WORK_READERS
from ..errors import OffsetOutOfRange, shown
from . import expiry, ops
from .events import Deleted, OpApplied, Replaced, WorkQueueChanged
from .family import Family, checked_name
from .ops import OpRefused
from .work_queues import WorkState

if TYPE_CHECKING:
    from .state_machine import StateMachine


def declare(sm: StateMachine, args: list[Any]) -> Any:
    """``[topic, group, visibility_timeout_ms, max_deliveries, start]``: ``["ok", None]``,
    or ``["out_of_range", offset, base, end]`` for a new group's start outside the
    topic's retained range."""
    if len(args) != 5:
        raise OpRefused("bad_args", "group_declare is [topic, group, visibility_timeout_ms, "
                        "max_deliveries, start]")
    topic_name, group = checked_name(args[0]), checked_name(args[1])
    visibility_timeout, max_deliveries, start = args[2], args[3], args[4]
    name = group_queue_name(topic_name, group)
    existing = sm.work_queues.get(name)
    if existing is not None:
        if existing.group != (topic_name, group):
            raise OpRefused("name_taken", f"a work queue named {shown(name)} exists; it cannot "
                            f"also be group {shown(group)} of topic {shown(topic_name)}")
        core = existing.core
        if (core.visibility_timeout, core.max_deliveries) != (visibility_timeout,
                                                              max_deliveries):
            raise OpRefused(
                "config_mismatch",
                f"group {shown(group)} of topic {shown(topic_name)} exists with visibility_timeout="
                f"{core.visibility_timeout} ms and max_deliveries={core.max_deliveries}; "
                "open it with the same settings on every node")
        return ["ok", None]
    topic = sm.topics.get(topic_name)
    if topic is None:
        topic = sm.topics[topic_name] = TopicCore()
    try:
        work = new_group(visibility_timeout, max_deliveries, check_start(start), topic)
    except OffsetOutOfRange as exc:
        return ["out_of_range", exc.offset, exc.base, exc.end]
    except (TypeError, ValueError) as exc:
        raise OpRefused("bad_config", str(exc)) from exc
    rules = expiry.of(sm, "topic", topic_name) if sm.expiry else None
    if rules is not None and work.pending_len():
        group_expiry = expiry.of(sm, "work_queue", name, True)
        assert group_expiry is not None
        note_retained(group_expiry, work, topic, rules)
    state = sm.work_queues[name] = WorkState(work)
    state.group = (topic_name, group)
    state.lineage = topic.lineage  # its run holds the topic's elements
    sm.groups.setdefault(topic_name, {})[group] = name
    if work.pending_len():
        sm.emit(WorkQueueChanged(name, ALL_WORK_READERS))
    if sm.tap and ("work_queue", name) in sm.tap:
        sm.emit(Replaced("work_queue", name))
    return ["ok", None]


def feed(sm: StateMachine, topic: str, value: Any, ttl_ms: int | None = None) -> None:
    """``topic`` published ``value`` (with its own ``ttl_ms``, if any): push it into
    each of the topic's groups, with its deadline when it has one."""
    groups = sm.groups.get(topic)
    if not groups:
        return
    rules = expiry.of(sm, "topic", topic) if sm.expiry else None
    deadline = fed_deadline(sm.now, rules, ttl_ms)
    for name in groups.values():
        state = sm.work_queues[name]
        item_id, mask = state.core.push(value, sm.now)
        sm.emit(WorkQueueChanged(name, mask))
        if deadline is None:
            _report(sm, name, ops.WORK_PUSH, value)
            continue
        group_expiry = expiry.of(sm, "work_queue", name, True)
        assert group_expiry is not None
        group_expiry.deadlines[item_id] = deadline
        _report(sm, name, ops.WORK_PUSH_TTL, deadline - sm.now, value)


def forget_topic(sm: StateMachine, topic: str) -> None:
    """``topic`` was deleted: delete its groups."""
    for name in sm.groups.pop(topic, {}).values():
        expiry.forget(sm, "work_queue", name)
        state = sm.work_queues.pop(name, None)
        if state is not None:
            sm.receipt_ledger.forget(state.table)
            sm.emit(WorkQueueChanged(name, ALL_WORK_READERS))
            sm.emit(Deleted("work_queue", name))
            _report(sm, name, ops.WORK_DELETE)


def _report(sm: StateMachine, name: str, code: int, *args: Any) -> None:
    """Report what the group's work queue ``name`` went through as the op ``code`` on it
    (which a mirror replays to the same state), when it is in the tap."""
    if sm.tap and ("work_queue", name) in sm.tap:
        sm.tapped += 1
        sm.emit(OpApplied(sm.tapped, sm.now, [code, name, *args]))


def forget_queue(sm: StateMachine, state: WorkState) -> None:
    """A group's work queue was deleted: the topic stops feeding it."""
    if state.group is not None:
        topic, group = state.group
        groups = sm.groups.get(topic, {})
        groups.pop(group, None)
        if not groups:
            sm.groups.pop(topic, None)


FAMILY = Family("groups", {ops.GROUP_DECLARE: declare})
