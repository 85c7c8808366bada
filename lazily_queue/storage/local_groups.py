"""In-process consumer groups: work queues a local topic feeds as it publishes.

:class:`LocalGroupStorage` is a :class:`~lazily_queue.storage.local_work.LocalWorkQueueStorage`
that also declares ``observable``: the topic pushes into it when it publishes (not
through the group's cell), so every transition, the cell's own included, is reported to
the change listener. A group is fed only by its topic: ``push`` is refused.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

from ..core.groups import check_group, new_group
from ..core.topic import Start, TopicCore
from ..core.work import Delivery, Receipt, WorkQueueCore, WorkTransition
from ..errors import InvalidConfiguration
from .capabilities import StorageCapabilities
from .group_pushes import FedByTopic
from .local import Clock
from .local_work import LocalWorkQueueStorage
from .work import Settlement, WorkQueueChangeListener

R = TypeVar("R")


class LocalGroupStorage(FedByTopic, LocalWorkQueueStorage):
    """One consumer group of a local topic (module docstring)."""

    __slots__ = ("_listener", "group", "topic")

    capabilities = StorageCapabilities(sync=True, observable=True, logical_time=True)

    def __init__(self, core: WorkQueueCore, *, topic: str, group: str,
                 clock: Clock | None = None) -> None:
        super().__init__(core, name=f"{topic}:{group}", clock=clock)
        self.topic = topic
        self.group = group
        self._listener: WorkQueueChangeListener | None = None

    def __repr__(self) -> str:
        return f"LocalGroupStorage({self.name!r}, {self.core!r})"

    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        self._listener = listener

    def _report(self, transition: WorkTransition[R]) -> WorkTransition[R]:
        if transition.mask and self._listener is not None:
            self._listener(transition.mask)
        return transition

    def feed(self, value: Any, stamp: int | None = None) -> int:
        """The topic published ``value`` (enqueue ``stamp``, ms, when known): it enters
        the pending tail; returns its id."""
        return self._report(self.core.push(value, stamp)).result


    def try_push(self, value: Any) -> WorkTransition[int]:
        raise self._refuse_push()


    def try_claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]:
        return self._report(super().try_claim(worker, now))

    def try_settle(
        self, worker: str, delivery_id: int, outcome: Settlement
    ) -> WorkTransition[Receipt | None]:
        return self._report(super().try_settle(worker, delivery_id, outcome))

    def try_extend(self, worker: str, delivery_id: int, now: float) -> WorkTransition[bool]:
        return self._report(super().try_extend(worker, delivery_id, now))

    def try_reap_expired(self, now: float) -> WorkTransition[int]:
        return self._report(super().try_reap_expired(now))

    def try_redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]:
        return self._report(super().try_redrive(item_ids))

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        return self._report(await super().poll_many(worker, n, now))

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        return self._report(await super().release(worker, delivery_ids))


def open_group(
    groups: dict[str, LocalGroupStorage], topic_core: TopicCore[Any], topic: str, group: str,
    start: Start, clock: Clock | None, *, visibility_timeout: float, max_deliveries: int,
) -> LocalGroupStorage:
    """The group ``group`` in ``groups`` (made at ``start`` of ``topic_core`` the first
    time; the same settings after that, or :class:`InvalidConfiguration`)."""
    existing = groups.get(check_group(group))
    if existing is not None:
        settings = (existing.visibility_timeout, existing.max_deliveries)
        if settings != (visibility_timeout, max_deliveries):
            raise InvalidConfiguration(
                f"group {group!r} of topic {topic!r} exists with visibility_timeout="
                f"{settings[0]} and max_deliveries={settings[1]}; open it with those")
        if clock is not None:
            existing.clock = clock
        return existing
    work = new_group(visibility_timeout, max_deliveries, start, topic_core.base_offset(),
                     topic_core.elements(), topic_core.stamp_of)
    storage = groups[group] = LocalGroupStorage(work, topic=topic, group=group, clock=clock)
    return storage
