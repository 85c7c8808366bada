"""The retention figures and readers of a topic cell declared with limits (mixed into
the cell), and the wait for room of a ``reject`` topic's publish.

The topic is its storage's ``limited_topic()`` (the local core, or the locally applied
one on a replicated backend); without limits every figure is 0. Readers ``bytes`` (the
retained bytes) and ``dropped`` (elements ``drop_oldest`` dropped) are re-read after
each change the cell sees and invalidated when their value moved. A ``reject`` topic
has room again once elements leave its retained log: GC (what every durable subscriber
has read) or expiry; ``publish(..., wait=True)`` re-checks when the readers move, never
by polling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ..core.limited_topic import LimitedTopic
from ..core.limits import REJECT, Limits, value_size
from ..errors import LimitExceeded
from ..reactive import Context, Slot, wait_until


class TopicLimits:
    """``limits()``, ``retained_bytes()``, ``gap(id)`` and the readers ``bytes``,
    ``dropped``."""

    _storage: Any
    name: str
    #: The retained bytes (0 without limits).
    bytes: Slot[int]
    #: Elements the retention limits dropped (read or not).
    dropped: Slot[int]
    _held: Slot[int]
    _quota_seen: tuple[int, int, int] | None

    def _init_limits(self, context: Context) -> None:
        self.bytes = Slot(self.retained_bytes, context=context, name=f"{self.name}.bytes")
        self.dropped = Slot(self._dropped, context=context, name=f"{self.name}.dropped")
        self._held = Slot(self._retained, context=context, name=f"{self.name}.retained")
        limited = self.limits() is not None or self._limited() is not None
        self._quota_seen = self._quota_state() if limited else None

    def _limited(self) -> LimitedTopic[Any] | None:
        find = getattr(self._storage, "limited_topic", None)
        return None if find is None else cast("LimitedTopic[Any] | None", find())

    def _quota_state(self) -> tuple[int, int, int]:
        topic = self._limited()
        if topic is None:
            return (0, 0, 0)
        return (topic.quota.bytes, topic.quota.dropped_total(), len(topic.quota.sizes))

    def _refresh_limits(self) -> None:
        """Invalidate the readers whose value moved (a limited topic only)."""
        seen = self._quota_seen
        if seen is None:
            return
        now = self._quota_state()
        if now == seen:
            return
        self._quota_seen = now
        for slot, was, new in zip((self.bytes, self.dropped, self._held), seen, now,
                                  strict=True):
            if was != new:
                slot.invalidate()

    def limits(self) -> Limits | None:
        """The topic's retention limits (``None``: interest-based GC only)."""
        topic = self._limited()
        if topic is not None:
            return topic.limits()
        declared = getattr(self._storage, "declared_limits", None)
        return None if declared is None else cast("Limits | None", declared())

    def retained_bytes(self) -> int:
        """The bytes of the retained log (0 without limits)."""
        topic = self._limited()
        return 0 if topic is None else topic.quota.bytes

    def _dropped(self) -> int:
        topic = self._limited()
        return 0 if topic is None else topic.quota.dropped_total()

    def _retained(self) -> int:
        topic = self._limited()
        return 0 if topic is None else len(topic.quota.sizes)

    def gap(self, subscriber: str) -> int:
        """Elements the retention limits dropped before ``subscriber`` read them."""
        topic = self._limited()
        return 0 if topic is None else topic.gap(subscriber)

    def _named(self, exc: LimitExceeded) -> LimitExceeded:
        if exc.cell == self.name:
            return exc
        return LimitExceeded(f"topic {self.name!r}: {exc}", cell=self.name, limit=exc.limit,
                             value=exc.value)

    def _may_wait(self, value: Any) -> int | None:
        """The stored size of ``value`` when a ``reject`` topic may make room for it."""
        limits = self.limits()
        if limits is None or limits.overflow != REJECT:
            return None
        codec = getattr(self._storage, "codec", None)
        size = value_size(value if codec is None else codec.encode(value))
        return None if limits.max_bytes is not None and size > limits.max_bytes else size

    async def _wait_room(self, size: int, check: Callable[[], None], context: Context) -> None:
        """Return once a publish of ``size`` bytes fits the topic as applied here."""
        def room() -> bool:
            check()
            self.bytes()
            self._held()
            topic = self._limited()
            return topic is None or topic.has_room(size)

        await wait_until(room, context=context)
