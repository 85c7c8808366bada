"""Consumer groups of a topic: the naming and feeding rules every backend shares.

A group is a work queue (:class:`~lazily_queue.core.work.WorkQueueCore`) the topic feeds
at apply time: every element published after the group's start enters the group's
pending tail in the same step, numbered by its topic offset (``item_id == offset``).
Members claim with leases, ack, nack and are redelivered exactly as a work queue's
workers are; several groups each receive every element. The group's *lag* is what it
has not acked: its pending plus its in-flight items (dead letters are settled).

The group holds what it has not settled itself, so topic garbage collection never takes
an element from a group: a group never bounds the topic's retention frontier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .topic import Start, position
from .work import WorkQueueCore

#: Separates the topic's name from the group's in the name of the group's work queue.
SEPARATOR = ":"


def check_group(group: object) -> str:
    """A group name must be a non-empty ``str``; anything else raises ``ValueError``."""
    if not isinstance(group, str) or not group:
        raise ValueError(f"group name must be a non-empty str, got {group!r}")
    return group


def group_queue_name(topic: str, group: str) -> str:
    """The name of the work queue holding ``group`` of ``topic`` (``"orders:billing"``)."""
    return f"{topic}{SEPARATOR}{check_group(group)}"


def new_group(visibility_timeout: float, max_deliveries: int, start: Start, base: int,
              retained: Iterable[Any],
              stamp_of: Callable[[int], int] | None = None) -> WorkQueueCore:
    """A group starting at ``start`` of a topic retaining ``retained`` from offset
    ``base``: its pending items are the retained elements from there on (none at the
    tail), with their enqueue stamps (``stamp_of(offset)``, 0: unknown) when given.
    :class:`~lazily_queue.errors.OffsetOutOfRange` outside the retained range."""
    elements = list(retained)
    first = position(start, base, base + len(elements))
    core = WorkQueueCore(visibility_timeout, max_deliveries, first_item_id=first)
    for offset in range(first, base + len(elements)):
        core.push(elements[offset - base], None if stamp_of is None else stamp_of(offset))
    return core


def group_lag(core: WorkQueueCore) -> int:
    """Elements the group has not acked: pending, delayed (a nack's back-off) and in
    flight."""
    return core.pending_len() + core.delayed_len() + core.in_flight_len()
