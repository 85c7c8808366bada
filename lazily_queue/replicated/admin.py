"""Administration operations: purge and delete queues, topics and work queues, and the
replicated addresses of the members' status pages.

A purge drops the elements and keeps the object declared; a delete forgets the object
(a cell still open on it declares it again on its next operation). Each reports the
readers it changed, like any other transition, plus :class:`~.events.Deleted` for a
delete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.queue import RESET
from ..core.work_masks import ALL_WORK_READERS
from ..errors import shown
from . import expiry, groups, ops
from .events import Deleted, QueueChanged, TopicChanged, WorkQueueChanged
from .family import Family, Section, checked_name
from .ops import OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Longest status page address a member may announce.
MAX_PAGE_URL = 512


def queue_purge(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    q = sm.queues.get(name)
    if q is None:
        raise OpRefused("unknown_queue", f"queue {shown(name)} has not been declared")
    pre = q.len()
    removed = q.clear()
    if (found := expiry.of(sm, "queue", name)) is not None:
        found.clear_deadlines()
    if removed:
        sm.emit(QueueChanged(name, RESET, pre))
    return removed


def queue_delete(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    q = sm.queues.pop(name, None)
    if q is None:
        raise OpRefused("unknown_queue", f"queue {shown(name)} has not been declared")
    sm.emit(QueueChanged(name, RESET, q.len()))
    sm.emit(Deleted("queue", name))
    expiry.forget(sm, "queue", name)
    sm.popped.deleted(name)
    return q.len()


def topic_delete(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    topic = sm.topics.pop(name, None)
    if topic is None:
        raise OpRefused("unknown_topic", f"topic {shown(name)} has not been declared")
    sm.emit(TopicChanged(name, frozenset(topic.subscriptions())))
    sm.emit(Deleted("topic", name))
    expiry.forget(sm, "topic", name)
    groups.forget_topic(sm, name)
    return topic.end_offset() - topic.base_offset()


def work_purge(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    state = sm.work_queues.get(name)
    if state is None:
        raise OpRefused("unknown_work_queue", f"work queue {shown(name)} has not been declared")
    dead_letters = bool(args[1])
    removed, mask = state.core.purge(dead_letters=dead_letters)
    if not dead_letters and (found := expiry.of(sm, "work_queue", name)) is not None:
        found.clear_deadlines()  # the items they were of left; those in flight keep theirs
    if mask:
        sm.emit(WorkQueueChanged(name, mask))
    return removed


def work_delete(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    state = sm.work_queues.pop(name, None)
    if state is None:
        raise OpRefused("unknown_work_queue", f"work queue {shown(name)} has not been declared")
    groups.forget_queue(sm, state)
    sm.receipt_ledger.forget(state.table)
    sm.emit(WorkQueueChanged(name, ALL_WORK_READERS))
    sm.emit(Deleted("work_queue", name))
    expiry.forget(sm, "work_queue", name)
    core = state.core
    return (core.pending_len() + core.delayed_len() + core.in_flight_len()
            + core.dead_letter_len())


def member_page(sm: StateMachine, args: list[Any]) -> Any:
    node_id, url = str(args[0]), args[1]
    if url is None:
        sm.member_pages.pop(node_id, None)
        return None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or len(
            url) > MAX_PAGE_URL:
        raise OpRefused("bad_url", f"a status page address is an http(s) URL of at most "
                                   f"{MAX_PAGE_URL} characters, not {shown(url)}")
    sm.member_pages[node_id] = url
    return None


def _capture(sm: StateMachine) -> dict[str, str] | None:
    return dict(sm.member_pages) or None  # no section until a member announces a page


def _restore(sm: StateMachine, doc: Any) -> None:
    sm.member_pages = {str(k): str(v) for k, v in (doc or {}).items()}


FAMILY = Family(
    "admin",
    {
        ops.QUEUE_PURGE: queue_purge,
        ops.QUEUE_DELETE: queue_delete,
        ops.TOPIC_DELETE: topic_delete,
        ops.WORK_PURGE: work_purge,
        ops.WORK_DELETE: work_delete,
        ops.MEMBER_PAGE: member_page,
    },
    (Section("member_pages", _capture, _restore),),
)
