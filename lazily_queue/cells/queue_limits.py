"""The quota readers of a queue cell declared with limits, and its typed refusal.

A cell over a storage that declares ``limits`` (``limit_quota()`` returns its
:class:`~lazily_queue.core.limits.Quota`, read from the locally applied state on a
replicated backend) gets readers ``bytes`` (the bytes held, as
:func:`~lazily_queue.core.limits.value_size` counts them) and ``dropped`` (the elements
the overflow policy dropped), and its ``is_full`` reader follows every limit. Every
change of a limited queue invalidates all its readers: a push may drop elements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.limits import Limits, Quota, value_size
from ..errors import LimitExceeded, UnsupportedValue
from ..reactive import Slot, SlotGroup
from ..storage.local_limited import LimitedDequeStorage
from ..storage.queue import QueueStorage

QuotaSource = Callable[[], "Quota | None"]


def limits_of(storage: Any) -> Limits | None:
    """The limits a storage declares (capability ``limits``), or ``None``."""
    caps = getattr(storage, "capabilities", None)
    if caps is None or not getattr(caps, "limits", False):
        return None
    limits: Limits | None = storage.limits()
    return limits


class QuotaReaders:
    """``bytes`` and ``dropped`` of one limited queue, and its ``is_full`` rule."""

    __slots__ = ("bytes", "dropped", "quota")

    def __init__(self, name: str, quota: QuotaSource, group: SlotGroup) -> None:
        self.quota = quota
        self.bytes: Slot[int] = group.slot(self._bytes, f"{name}.bytes")
        self.dropped: Slot[int] = group.slot(self._dropped, f"{name}.dropped")

    def _bytes(self) -> int:
        q = self.quota()
        return 0 if q is None else q.bytes

    def _dropped(self) -> int:
        q = self.quota()
        return 0 if q is None else q.dropped_total()

    @classmethod
    def of(cls, name: str, storage: QueueStorage[Any], group: SlotGroup) -> QuotaReaders | None:
        """The quota readers of a limited storage (in ``group``), else ``None``; every
        change of a limited queue then invalidates every reader of the group."""
        if limits_of(storage) is None:
            return None
        return cls(name, storage.limit_quota, group)  # type: ignore[attr-defined]

    def readers(self) -> dict[str, Slot[int]]:
        return {"bytes": self.bytes, "dropped": self.dropped}

    @staticmethod
    def full(q: Quota | None) -> bool:
        """Whether ``q`` refuses the smallest push (never under ``drop_oldest``)."""
        return q is not None and q.limits.overflow == "reject" and q.is_full()


def limit_exceeded(name: str, kind: str, limits: Limits | None, capacity: int | None,
                   quota: Quota | None, value: Any) -> LimitExceeded:
    """The error of a push ``reject`` refused: which limit, its bound and the fix."""
    limit, bound = "max_length", capacity
    if limits is not None:  # the limit the state read here breaks (it may trail)
        broken = None
        if quota is not None:
            try:
                broken = quota.check(value_size(value))
            except UnsupportedValue:
                pass
        if broken is not None:
            limit = broken[0]
        elif limits.max_length is None:
            limit = "max_bytes"
        bound = limits.max_bytes if limit == "max_bytes" else limits.max_length
    return LimitExceeded(
        f"{kind} {name!r} is full: its {limit} limit of {bound} "
        f"{'bytes' if limit == 'max_bytes' else 'elements'} refused the push; wait for "
        "room (push(..., wait=True)), consume faster, raise the limit, or declare it with "
        "overflow='drop_oldest'", cell=name, limit=limit, value=bound)


def full_rule(storage: QueueStorage[Any], cap: int | None) -> Callable[[], bool]:
    """The ``is_full`` reader's rule: the limits' when declared, else the capacity's."""
    if limits_of(storage) is not None:
        quota = storage.limit_quota  # type: ignore[attr-defined]
        return lambda: QuotaReaders.full(quota())
    return (lambda: False) if cap is None else (lambda: storage.len() >= cap)


def limited_deque(capacity: int | None, limits: Limits,
                  clock: Callable[[], float] | None) -> QueueStorage[Any]:
    """The local deque of a cell declared with ``limits`` (``capacity`` is its
    ``max_length``: give one or the other)."""
    if capacity is not None:
        raise ValueError("give the bound as Limits(max_length=...) or capacity=, not both")
    return LimitedDequeStorage(limits, clock=clock)
