"""In-process consumer groups: work queues a local topic feeds as it publishes.

:class:`LocalGroupStorage` is a :class:`~lazily_queue.storage.local_work.LocalWorkQueueStorage`
that also declares ``observable``: the topic pushes into it when it publishes (not
through the group's cell), so every transition, the cell's own included, is reported to
the change listener. A group is fed only by its topic: ``push`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any, TypeVar

from ..core.expiry import Expiry
from ..core.expiry_take import claim_live, expire_work_head
from ..core.groups import check_group, new_group
from ..core.topic import Start, TopicCore
from ..core.work import Delivery, Receipt, WorkQueueCore, WorkTransition
from ..core.work_masks import EXPIRED as WORK_EXPIRED
from ..errors import InvalidConfiguration
from .attempts import check_timeout
from .capabilities import StorageCapabilities
from .group_pushes import FedByTopic
from .local import Clock
from .local_work import LocalWorkQueueStorage, _time
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

    def note_deadline(self, item_id: int, deadline: int | None) -> None:
        """Item ``item_id`` (just fed) expires at ``deadline`` (ms): ignored here, a group
        without expiry (:class:`ExpiringGroupStorage` keeps it)."""

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
        if timeout is not None:
            check_timeout(timeout)
        return self._report(await super().poll_many(worker, n, now))

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self._report(await super().release(worker, delivery_ids))


class ExpiringGroupStorage(LocalGroupStorage):
    """A group whose elements expire while they wait for their first delivery (module
    docstring); ``now_ms`` is its topic's clock, in ms."""

    __slots__ = ("_now_ms", "expiry")

    capabilities = replace(LocalGroupStorage.capabilities, expiry=True)

    def __init__(self, core: WorkQueueCore, *, topic: str, group: str,
                 now_ms: Callable[[], int], clock: Clock | None = None) -> None:
        super().__init__(core, topic=topic, group=group, clock=clock)
        self.expiry = Expiry()
        self._now_ms = now_ms

    def expired_count(self) -> int:
        return self.expiry.expired

    def note_deadline(self, item_id: int, deadline: int | None) -> None:
        """Item ``item_id`` (just fed) expires at ``deadline`` (ms; ``None``: never)."""
        if deadline is not None:
            self.expiry.deadlines[item_id] = deadline

    def _claim_live(self, worker: str, now: float, n: int) -> WorkTransition[list[Delivery]]:
        leased, expired, mask = claim_live(self.core, self.expiry, worker, self._now_ms(),
                                           now, n)
        return self._report(WorkTransition(leased, mask | (WORK_EXPIRED if expired else 0)))

    def try_claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]:
        leased, mask = self._claim_live(worker, now, 1)
        return WorkTransition(leased[0] if leased else None, mask)

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        if timeout is not None:
            check_timeout(timeout)
        return self._claim_live(worker, _time(now), n)

    def try_expire(self) -> WorkTransition[int]:
        """Discard the elements expired now (the topic's clock) at the group's head."""
        n, mask = expire_work_head(self.core, self.expiry, self._now_ms())
        return self._report(WorkTransition(n, mask | (WORK_EXPIRED if n else 0)))


def open_group(
    groups: dict[str, LocalGroupStorage], topic_core: TopicCore[Any], topic: str, group: str,
    start: Start, clock: Clock | None, *, visibility_timeout: float, max_deliveries: int,
    expiring: Callable[[WorkQueueCore], LocalGroupStorage] | None = None,
) -> LocalGroupStorage:
    """The group ``group`` in ``groups`` (made at ``start`` of ``topic_core`` the first
    time; the same settings after that, or :class:`InvalidConfiguration`); ``expiring``
    makes a new group's storage on a topic with expiry."""
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
    work = new_group(visibility_timeout, max_deliveries, start, topic_core)
    storage = groups[group] = (LocalGroupStorage(work, topic=topic, group=group, clock=clock)
                               if expiring is None else expiring(work))
    return storage
