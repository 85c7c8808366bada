"""The local topic with retention by age (capability ``expiry``).

:class:`ExpiringTopicStorage` is :class:`~.local.LocalTopicStorage` whose elements leave
once older than the topic's age limit (the smaller of ``ttl`` and ``max_age``, seconds)
even when durable subscribers have not read them: each publish and each GC drops them
at the head, on its ``clock`` (seconds, as ``time.time``, the default). A cursor below
the new base moves up to it (its reader is invalidated, so the gap is visible) and the
elements it lost are counted in ``skipped``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ..core.expiry import Expiry, optional_ttl_ms
from ..core.expiry_take import age_frontier
from ..core.topic import TopicTransition
from .capabilities import StorageCapabilities
from .local import Clock, LocalTopicStorage, _ms

T = TypeVar("T")


class ExpiringTopicStorage(LocalTopicStorage[T]):
    """A local topic dropping what is older than its age limit."""

    __slots__ = ("_expired_listener", "_now", "expiry")

    capabilities = StorageCapabilities(sync=True, dedup=True, messages=True, replay=True,
                                       groups=True, expiry=True)

    def __init__(self, *, ttl: float | None = None, max_age: float | None = None,
                 clock: Clock = time.time) -> None:
        self.expiry = Expiry(optional_ttl_ms(ttl), optional_ttl_ms(max_age, "max_age"))
        super().__init__(clock=clock)
        self._now = _ms(clock)
        self._expired_listener: Callable[[], None] | None = None

    def set_expired_listener(self, listener: Callable[[], None] | None) -> None:
        self._expired_listener = listener

    def expired_count(self) -> int:
        return self.expiry.expired

    @property
    def skipped(self) -> int:
        """Unread elements subscribers lost to the age limit (the gaps they saw)."""
        return self.expiry.skipped

    def expire(self) -> TopicTransition[int]:
        """Drop what is past the age limit now; returns how many elements left."""
        core = self.core
        frontier = age_frontier(core, self.expiry, self._now())
        dropped = frontier - core.base_offset()
        if dropped <= 0:
            return TopicTransition(0, frozenset())
        skipped, invalidated = core.drop_before(frontier)
        self.expiry.expired += dropped
        self.expiry.skipped += sum(skipped.values())
        if self._expired_listener is not None:
            self._expired_listener()
        return TopicTransition(dropped, invalidated)

    def try_publish(self, value: T) -> TopicTransition[int]:
        offset, invalidated = super().try_publish(value)
        return TopicTransition(offset, invalidated | self.expire().invalidated)

    def try_gc(self) -> TopicTransition[int]:
        removed, invalidated = super().try_gc()
        dropped, clamped = self.expire()
        return TopicTransition(removed + dropped, invalidated | clamped)
