"""The topic of a cell declared with :class:`~.limits.Limits`: retention by count and bytes.

A :class:`~.topic.TopicCore` whose retained log is bounded by ``max_length`` elements and
``max_bytes`` bytes (sizes as :func:`~.limits.value_size` counts them). Its overflow
policy says what a publish past a limit does:

- ``drop_oldest``: it first drops the oldest retained elements, as many as it takes,
  *even when durable subscribers have not read them*. Each dropped element is counted
  (reason ``"drop_oldest"``); a subscriber whose cursor was below the new base
  continues at the first retained element, its reader is invalidated (when connected)
  and the elements it missed are added to its gap (:meth:`LimitedTopic.gap`). A gap is
  kept while its subscription is: it goes with an ephemeral subscriber's disconnect and
  with a deletion, so an id subscribed again starts at 0.
- ``reject``: it is refused with :class:`~lazily_queue.errors.LimitExceeded` and nothing
  changes; room is made only by elements leaving the retained log: GC (what every
  durable subscriber has read) and expiry (the topic's age limit, per-message TTLs).

An element larger than ``max_bytes`` is refused under either policy. GC
(interest-based retention) and expiry still apply below the limits.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..errors import LimitExceeded
from .limits import DROP_OLDEST, REJECT, Limits, Quota, value_size
from .topic import TopicCore, TopicTransition
from .topic_subscriptions import Durability, Start, SubscribeOutcome

R = TypeVar("R")


def check_topic_limits(limits: Limits) -> Limits:
    """``limits`` for a topic (either policy); ``TypeError`` for anything else."""
    if not isinstance(limits, Limits):
        raise TypeError(f"a topic's limits are a Limits, not {type(limits).__name__}")
    return limits


class LimitedTopic(TopicCore[R]):
    """A topic with retention limits (module docstring)."""

    __slots__ = ("gaps", "quota")

    def __init__(self, limits: Limits) -> None:
        super().__init__()
        self.quota = Quota(check_topic_limits(limits))
        #: Per subscriber, the elements dropped before it read them.
        self.gaps: dict[str, int] = {}

    @classmethod
    def limited(cls, core: TopicCore[Any], limits: Limits) -> LimitedTopic[Any]:
        """The topic ``core`` holds (log, cursors, stamps) under ``limits``."""
        topic: LimitedTopic[Any] = cls(limits)
        restored: TopicCore[Any] = TopicCore.from_snapshot(core.snapshot())
        topic._base, topic._elements = restored._base, restored._elements
        topic._subs, topic._connected = restored._subs, restored._connected
        topic._connected_set = None
        topic.load_stamps(core.stamps())
        topic.lineage = core.lineage  # the same elements at the same offsets
        topic.quota = Quota(limits, topic._elements)
        return topic

    def __repr__(self) -> str:
        return f"LimitedTopic(base={self._base}, len={len(self._elements)}, {self.quota!r})"

    def limits(self) -> Limits:
        return self.quota.limits

    def gap(self, subscriber: str) -> int:
        """How many elements were dropped before ``subscriber`` read them."""
        return self.gaps.get(subscriber, 0)

    def keep_gaps(self, gaps: dict[str, int]) -> None:
        """Take ``gaps`` (a snapshot's), only those of subscriptions this topic holds."""
        subs = self._subs
        self.gaps = {k: v for k, v in gaps.items() if k in subs}

    def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE,
        start: Start = "tail",
    ) -> TopicTransition[SubscribeOutcome]:
        """As :meth:`TopicCore.subscribe`; a new subscription starts without a gap."""
        fresh = subscriber not in self._subs
        transition = super().subscribe(subscriber, durability, start)
        if fresh:
            self.gaps.pop(subscriber, None)
        return transition

    def disconnect(self, subscriber: str) -> TopicTransition[bool]:
        """As :meth:`TopicCore.disconnect`; an ephemeral subscriber's gap goes with it."""
        transition = super().disconnect(subscriber)
        if transition.result and subscriber not in self._subs:
            self.gaps.pop(subscriber, None)
        return transition

    def delete_subscriber(self, subscriber: str) -> TopicTransition[bool]:
        """As :meth:`TopicCore.delete_subscriber`; the subscriber's gap goes too."""
        transition = super().delete_subscriber(subscriber)
        self.gaps.pop(subscriber, None)
        return transition

    def publish(self, value: R, stamp: int | None = None) -> TopicTransition[int]:
        quota = self.quota
        size = value_size(value)
        over = quota.room_for(size)
        clamped: frozenset[str] = frozenset()
        if over is not None:
            if over[1] < 0:
                raise LimitExceeded(
                    f"an element of {size} bytes never fits its max_bytes limit of "
                    f"{quota.limits.max_bytes}; store large payloads elsewhere and publish a "
                    "reference, or raise the limit", cell="topic", limit="max_bytes",
                    value=quota.limits.max_bytes)
            if quota.limits.overflow == REJECT:
                raise full(quota.limits, over[0], size)
            clamped = self._drop_oldest(over[1])
        offset, invalidated = super().publish(value, stamp)
        quota.pushed(size)
        return TopicTransition(offset, invalidated | clamped)

    def _drop_oldest(self, k: int) -> frozenset[str]:
        """Drop the ``k`` oldest retained elements; the connected subscribers moved."""
        base = self._base + k
        del self._elements[:k]
        self._base = base
        self._stamps.forget_below(base)
        self.quota.popped(k)
        self.quota.count_dropped(DROP_OLDEST, k)
        moved = []
        for subscriber, record in self._subs.items():
            if record.cursor < base:
                self.gaps[subscriber] = self.gaps.get(subscriber, 0) + base - record.cursor
                record.cursor = base
                if record.connected:
                    moved.append(subscriber)
        return frozenset(moved)

    def has_room(self, size: int) -> bool:
        """Whether a publish of ``size`` bytes would be appended as the topic stands
        (under ``drop_oldest`` always, unless it never fits)."""
        over = self.quota.room_for(size)
        return over is None or (over[1] >= 0 and self.quota.limits.overflow != REJECT)

    def gc(self) -> TopicTransition[int]:
        transition = super().gc()
        self.quota.popped(transition.result)
        return transition

    def drop_before(self, offset: int) -> TopicTransition[dict[str, int]]:
        before = self._base
        transition = super().drop_before(offset)
        self.quota.popped(self._base - before)
        return transition


def full(limits: Limits, limit: str, size: int) -> LimitExceeded:
    """The refusal of a publish a ``reject`` topic has no room for."""
    bound = limits.max_bytes if limit == "max_bytes" else limits.max_length
    return LimitExceeded(
        f"its {limit} limit of {bound} {'bytes' if limit == 'max_bytes' else 'elements'} "
        f"refuses a publish of {size} bytes; wait for room (publish(..., wait=True): GC of "
        "what every durable subscriber read, or expiry, frees it), raise the limit, or "
        "declare it with overflow='drop_oldest'", cell="topic", limit=limit, value=bound)
