"""GroupCell: a consumer group of a topic, seen as the work queue it is.

``topic.group("billing")`` opens it: a durable work queue the topic feeds with every
element it publishes from the group's start on (see :mod:`lazily_queue.core.groups`).
Members are workers: ``claim`` / ``poll`` / :meth:`~WorkQueueCell.deliveries` lease
elements (each to one member at a time), ``ack`` / ``nack`` / ``extend`` settle them, a
member that dies leaves leases that expire and are redelivered to the others
(``reap_expired``; a node reaps by itself). :meth:`GroupCell.leave` hands a member's
leases back at once. Item ids are topic offsets. ``lag`` (a reader) counts the elements
the group has not acked. A group is fed only by its topic: ``push`` is refused. On a
topic with expiry each element enters the group with its topic deadline and is never
delivered after it (while it waits for its first delivery): the group's ``expired``
reader counts those it discarded instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.topic import Start, TopicCore, check_start
from ..core.work import WorkQueueCore
from ..errors import (
    InvalidConfiguration,
    InvalidSnapshot,
    OffsetOutOfRange,
    UnsupportedOperation,
    shown,
)
from ..reactive import Computed, computed
from ..serializers import Serializer
from ..storage.local_groups import LocalGroupStorage
from ..storage.local_topic import LocalTopicStorage
from ..storage.topic import as_group_topic
from ..storage.work import WorkQueueStorage
from .work_batches import Clock, Now
from .work_queue import DEFAULT_MAX_DELIVERIES, DEFAULT_VISIBILITY_TIMEOUT, WorkQueueCell

if TYPE_CHECKING:
    from .topic import TopicCell


class GroupCell(WorkQueueCell):
    """One consumer group of a topic (module docstring)."""

    def __init__(self, storage: WorkQueueStorage, *, topic: TopicCell[Any], group: str,
                 clock: Clock | None = None, serializer: Serializer[Any] | None = None,
                 forget: Callable[[], object] | None = None) -> None:
        super().__init__(storage, clock=clock, context=topic.ctx, name=f"{topic.name}:{group}",
                         serializer=serializer)
        self.topic = topic
        self.group = group
        self._declare: Callable[[], Awaitable[None]] | None = getattr(storage, "declare", None)
        #: The group exists (declared, on a replicated backend).
        self.declared = self._declare is None
        # Called when the declaration finds the group cannot exist (given by its opener).
        self._forget: Callable[[], object] = forget or (lambda: None)
        #: Elements the group has not acked (pending, delayed and in flight), a reader.
        self.lag: Computed[int] = computed(
            lambda: self.pending_len() + self.in_flight_len() + self.delayed_len(),
            context=self.ctx, name=f"{self.name}.lag")

    def __repr__(self) -> str:
        return f"GroupCell({self.name!r}, storage={self.storage!r})"

    def try_push(self, value: Any) -> int:
        raise self._fed_by_topic()

    async def push(self, value: Any, *, msg_id: str | None = None, priority: int = 0,
                   delay: float | None = None, not_before: datetime | None = None,
                   now: Now = None, wait: bool = True, ttl: float | None = None,
                   headers: Mapping[str, str] | None = None) -> int:
        raise self._fed_by_topic()

    async def push_many(self, values: Iterable[Any], *, wait: bool = True) -> list[int]:
        raise self._fed_by_topic()

    def _fed_by_topic(self) -> UnsupportedOperation:
        return UnsupportedOperation(
            f"{self.name}: a consumer group is fed by its topic; use "
            f"`await {self.topic.name}.publish(value)`")

    async def declare(self) -> None:
        """Make the group exist now. Locally it does from :meth:`TopicCell.group`; over a
        replicated backend at its first operation otherwise, or when its topic cell next
        publishes: elements published on the cluster before that are not the group's
        (a ``"tail"`` group starts at the tail as the cluster applies the declaration)."""
        self._own()
        if self._declare is not None and not self.declared:
            try:
                await self._declare()
            except OffsetOutOfRange:
                self._forget()  # it does not exist: opening it again starts over
                raise
        self.declared = True

    async def leave(self, member: str) -> int:
        """``member`` leaves: its leases go back to the pending head at once, unstarted
        (not counted as attempts), for the other members. Returns how many. A member
        that dies without leaving gets the same when its leases expire (as attempts)."""
        self._own()
        leased = self.in_flight_by_worker().get(member, [])
        if not leased:
            return 0
        return await self.release(member, [d.delivery_id for d in leased])

    def readers(self) -> dict[str, Any]:
        return {**super().readers(), "lag": self.lag}


def open_group(
    topic: TopicCell[Any], cells: dict[str, GroupCell], group: str, *,
    visibility_timeout: float | None, max_deliveries: int | None, start: Start,
    clock: Clock | None, opening: Callable[[str], None],
) -> GroupCell:
    """The cell of ``topic``'s group ``group``: the one already open in ``cells`` (same
    settings), or a new one over the backend's group (capability ``groups``), once
    ``opening("group")`` returned (the topic's thread check, :mod:`.loop_owner`)."""
    check_start(start)
    lease = DEFAULT_VISIBILITY_TIMEOUT if visibility_timeout is None else visibility_timeout
    retries = DEFAULT_MAX_DELIVERIES if max_deliveries is None else max_deliveries
    cell = cells.get(group)
    if cell is not None:
        if (cell.lease_seconds, cell.max_deliveries) != (lease, retries) and not (
                visibility_timeout is None and max_deliveries is None):
            raise InvalidConfiguration(
                f"group {group!r} of topic {topic.name!r} is already open with "
                f"visibility_timeout={cell.lease_seconds} and "
                f"max_deliveries={cell.max_deliveries}")
        return cell
    opening("group")
    backend = as_group_topic(topic.storage)
    if backend is None:
        raise UnsupportedOperation(
            f"{topic.name}: {type(topic.storage).__name__} has no consumer groups; "
            "use a local topic, a node's or a cluster client's (connect(members, ...))")
    storage = backend.open_group(topic.name, group, visibility_timeout=lease,
                                 max_deliveries=retries, start=start, clock=clock)
    cell = cells[group] = GroupCell(storage, topic=topic, group=group, clock=clock,
                                    serializer=topic.serializer,
                                    forget=lambda: cells.pop(group, None))
    return cell


def restore_local_topic(snapshot: Mapping[str, Any], name: str,
                        clock: Callable[[], float] | None = None) -> LocalTopicStorage[Any]:
    """A local topic storage from a topic snapshot, with its ``groups`` (each a work
    queue's snapshot) when present, stamping publishes with ``clock`` (seconds);
    :class:`InvalidSnapshot` when inconsistent."""
    data = dict(snapshot) if isinstance(snapshot, Mapping) else snapshot
    raw_groups = data.pop("groups", {}) if isinstance(data, dict) else {}
    core: TopicCore[Any] = TopicCore.from_snapshot(data)
    if not isinstance(raw_groups, Mapping):
        raise InvalidSnapshot(f"topic snapshot: groups must be a map, got {shown(raw_groups)}")
    groups = {}
    for group, raw in raw_groups.items():
        if not isinstance(group, str) or not group:
            raise InvalidSnapshot(f"topic snapshot: group name {shown(group)} is not a str")
        work = WorkQueueCore.from_snapshot(raw)
        groups[group] = LocalGroupStorage(work, topic=name, group=group)
    return LocalTopicStorage(core, groups=groups, clock=clock)
