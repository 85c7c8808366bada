"""Consumer groups of a topic: the naming and feeding rules every backend shares.

A group is a work queue (:class:`~lazily_queue.core.work.WorkQueueCore`) the topic feeds
at apply time: every element published after the group's start enters the group's
pending tail in the same step, numbered by its topic offset (``item_id == offset``).
Members claim with leases, ack, nack and are redelivered exactly as a work queue's
workers are; several groups each receive every element. The group's *lag* is what it
has not acked: its pending plus its in-flight items (dead letters are settled).

The group holds what it has not settled itself, so topic garbage collection never takes
an element from a group: a group never bounds the topic's retention frontier.

Expiry: an element enters a group with the deadline it has on its topic (the earlier of
its publish stamp plus its own ``ttl`` and plus the topic's age limit, the smaller of
the topic's ``ttl`` and ``max_age``; :mod:`.topic_expiry`), fixed as it enters. From
then on it expires in the group as a work item does (:mod:`.expiry_take`): while it
waits for its first delivery, a claim at or after its deadline discards it (counted in
the group's ``expired``) and leases the next live one instead; a sweep discards the
expired ones at the group's head. Once leased it never expires (its lease, retries and
dead letters decide). Each group counts its own expired elements; the topic's count is
its log's.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidName, shown
from .expiry import Expiry
from .expiry_retained import RetainedDeadlines
from .topic import Start, TopicCore, position
from .work import WorkQueueCore

#: Separates the topic's name from the group's in the name of the group's work queue.
SEPARATOR = ":"


def check_group(group: object) -> str:
    """A group name must be a non-empty ``str``; anything else raises
    :class:`~lazily_queue.errors.InvalidName` (a ``ValueError``), as other names do."""
    if not isinstance(group, str) or not group:
        raise InvalidName(f"group name must be a non-empty str, got {shown(group)}")
    return group


def group_queue_name(topic: str, group: str) -> str:
    """The name of the work queue holding ``group`` of ``topic`` (``"orders:billing"``)."""
    return f"{topic}{SEPARATOR}{check_group(group)}"


def new_group(visibility_timeout: float, max_deliveries: int, start: Start,
              topic: TopicCore[Any]) -> WorkQueueCore:
    """A group starting at ``start`` of ``topic``: its pending items are the retained
    elements from there on (none at the tail), numbered by their offsets, with their
    enqueue stamps. :class:`~lazily_queue.errors.OffsetOutOfRange` outside the retained
    range.

    The work is one copy of the references to those elements and of their stamps'
    change points, whatever their number: the items are the run of a
    :class:`~.work_retained.RetainedPending`, each made as it leaves the pending head."""
    end = topic.end_offset()
    first = position(start, topic.base_offset(), end)
    core = WorkQueueCore(visibility_timeout, max_deliveries, first_item_id=first)
    if first < end:
        core.take_retained(topic.elements_from(first), topic.stamps_between(first, end))
    return core


def group_lag(core: WorkQueueCore) -> int:
    """Elements the group has not acked: pending, delayed (a nack's back-off) and in
    flight."""
    return core.pending_len() + core.delayed_len() + core.in_flight_len()


def fed_deadline(stamp: int, rules: Expiry | None, ttl_ms: int | None) -> int | None:
    """The deadline (ms) an element published at ``stamp`` with its own ``ttl_ms``
    (``None``: none) brings into the groups of a topic with expiry ``rules``; ``None``
    when it never expires."""
    limits = [ttl_ms] if ttl_ms is not None else []
    if rules is not None:
        limits += [v for v in (rules.default_ms, rules.max_age_ms) if v is not None]
    return stamp + min(limits) if limits else None


def note_retained(group: Expiry, core: WorkQueueCore, topic: TopicCore[Any],
                  rules: Expiry | None) -> None:
    """A new group's pending items (retained elements of ``topic``, item ids from the
    first pending one to the next to be given) take their topic deadlines into the
    group's expiry record ``group``, as a :class:`RetainedDeadlines` (each deadline is
    looked up when asked, not listed here)."""
    if rules is None:
        return
    end = core.next_ids()[0]
    first = end - core.pending_len()
    if first < end:
        group.retained = RetainedDeadlines.of(topic, rules, first, end)
