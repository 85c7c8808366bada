"""The local topic with expiry (capability ``expiry``): retention by age, per-message TTLs.

:class:`ExpiringTopicStorage` is :class:`~.local_topic.LocalTopicStorage` whose elements leave
once past their deadline (:mod:`lazily_queue.core.topic_expiry`: the earlier of the
topic's age limit, the smaller of ``ttl`` and ``max_age`` seconds, and the element's own
``ttl``) even when durable subscribers have not read them: each publish and each GC
drops the expired ones at the head (a publish before it appends, so
expiry makes room for it under limits), on its ``clock`` (seconds, as ``time.time``, the
default). A cursor below the new base moves up to it (its reader is invalidated, so the
gap is visible) and the elements it lost are counted in ``skipped``; a take
(``try_advance``) moves the cursor past expired elements behind a live head, never
handing one out (counted in ``skipped`` too). ``limits`` bounds the retained log as
:class:`~lazily_queue.core.limited_topic.LimitedTopic` does. Its consumer groups are
:class:`~.local_groups.ExpiringGroupStorage`: each element enters them with its deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..core.expiry import Expiry, optional_ttl_ms
from ..core.groups import note_retained
from ..core.limited_topic import LimitedTopic
from ..core.limits import Limits
from ..core.topic import Start, TopicTransition
from ..core.topic_expiry import age_frontier, deadline, expiring_at_head, skip_expired
from ..core.work import WorkQueueCore
from .capabilities import StorageCapabilities
from .local import Clock, _ms
from .local_topic import LocalTopicStorage

if TYPE_CHECKING:
    from .local_groups import LocalGroupStorage

T = TypeVar("T")


class ExpiringTopicStorage(LocalTopicStorage[T]):
    """A local topic dropping what is past its deadline."""

    __slots__ = ("_expired_listener", "_now", "_took", "expiry")

    capabilities = StorageCapabilities(sync=True, dedup=True, messages=True, replay=True,
                                       replay_time=True, headers=True, groups=True,
                                       expiry=True)

    def __init__(self, *, ttl: float | None = None, max_age: float | None = None,
                 clock: Clock = time.time, limits: Limits | None = None) -> None:
        self.expiry = Expiry(optional_ttl_ms(ttl), optional_ttl_ms(max_age, "max_age"))
        super().__init__(None if limits is None else LimitedTopic(limits), clock=clock)
        self._now = _ms(clock)
        self._expired_listener: Callable[[], None] | None = None
        #: ``(subscriber, cursor)`` of the last skip, so the take that follows it hands
        #: out the element that skip found live.
        self._took: tuple[str, int] | None = None

    def set_expired_listener(self, listener: Callable[[], None] | None) -> None:
        self._expired_listener = listener

    def expired_count(self) -> int:
        return self.expiry.expired

    @property
    def skipped(self) -> int:
        """Unread elements subscribers lost to expiry (the gaps they saw)."""
        return self.expiry.skipped

    def expiring_at_head(self) -> int:
        """How many elements at the head have expired now (the next publish drops them)."""
        return expiring_at_head(self.core, self.expiry, self._now())

    def expire(self) -> TopicTransition[int]:
        """Drop what is expired at the head now; returns how many elements left."""
        core = self.core
        frontier = age_frontier(core, self.expiry, self._now())
        dropped = frontier - core.base_offset()
        if dropped <= 0:
            return TopicTransition(0, frozenset())
        skipped, invalidated = core.drop_before(frontier)
        self.expiry.expired += dropped
        self.expiry.skipped += sum(skipped.values())
        self.expiry.forget_below(frontier)
        if self._expired_listener is not None:
            self._expired_listener()
        return TopicTransition(dropped, invalidated)

    def _publish_one(self, value: T, ttl_ms: int | None) -> TopicTransition[int]:
        """Drop what expired, then append (expiry makes room before the limits judge)."""
        self._took = None
        expired = self.expire().invalidated
        offset, invalidated = LocalTopicStorage.try_publish(self, value)
        if ttl_ms is not None:
            self.expiry.note(offset, self.core.stamp_of(offset), ttl_ms)
        if self.groups:
            fed = deadline(self.core, self.expiry, offset)
            for group in self.groups.values():
                group.note_deadline(offset, fed)
        return TopicTransition(offset, invalidated | expired)

    def try_publish(self, value: T) -> TopicTransition[int]:
        return self._publish_one(value, None)

    def open_group(
        self, topic: str, group: str, *, visibility_timeout: float, max_deliveries: int,
        start: Start = "tail", clock: Clock | None = None,
    ) -> LocalGroupStorage:
        """As :meth:`LocalTopicStorage.open_group`; a new group's elements (retained ones
        included) carry their deadlines."""
        from .local_groups import ExpiringGroupStorage, open_group

        def expiring(work: WorkQueueCore) -> LocalGroupStorage:
            storage = ExpiringGroupStorage(work, topic=topic, group=group, clock=clock,
                                           now_ms=self._now)
            note_retained(storage.expiry, work, self.core, self.expiry)
            return storage

        return open_group(self.groups, self.core, topic, group, start, clock,
                          visibility_timeout=visibility_timeout, max_deliveries=max_deliveries,
                          expiring=expiring)

    def try_skip_expired(self, subscriber: str) -> TopicTransition[int]:
        """Move the subscriber's cursor past the expired elements at it, now."""
        transition = skip_expired(self.core, self.expiry, subscriber, self._now())
        cursor = self.core.cursor(subscriber)
        self._took = None if cursor is None else (subscriber, cursor)
        return transition

    def try_advance(self, subscriber: str) -> TopicTransition[T | None]:
        skipped: frozenset[str] = frozenset()
        if self._took != (subscriber, self.core.cursor(subscriber)):
            skipped = skip_expired(self.core, self.expiry, subscriber, self._now()).invalidated
        self._took = None
        value, invalidated = super().try_advance(subscriber)
        return TopicTransition(value, invalidated | skipped)

    def try_delete_subscriber(self, subscriber: str) -> TopicTransition[bool]:
        self._took = None
        return super().try_delete_subscriber(subscriber)

    def try_gc(self) -> TopicTransition[int]:
        self._took = None
        removed, invalidated = super().try_gc()
        self.expiry.forget_below(self.core.base_offset())
        dropped, clamped = self.expire()
        return TopicTransition(removed + dropped, invalidated | clamped)
