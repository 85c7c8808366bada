"""The quota readers of a queue cell declared with limits, and its typed refusal.

A cell over a storage that declares ``limits`` (``limited_fifo()`` returns its
:class:`~lazily_queue.core.limited_fifo.LimitedFifo`, the locally applied one on a
replicated backend) gets readers ``bytes`` (the bytes held, as
:func:`~lazily_queue.core.limits.value_size` counts them) and ``dropped`` (the elements
the overflow policy dropped), and its ``is_full`` reader follows every limit.

A push may drop elements, so the transition masks of a plain queue do not describe a
limited one: after each change the cell compares what its readers read (the head's
message id, the length, the closed flag, fullness, bytes, dropped) with what they read
before, and invalidates exactly the readers whose value moved (a head replaced by an
equal value is a new head: it has a new id).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..core.limited_fifo import LimitedFifo
from ..core.limits import Limits, Quota, value_size
from ..core.queue import CLOSED, HEAD, IS_EMPTY, IS_FULL, LEN
from ..errors import LimitExceeded, UnsupportedValue
from ..reactive import Slot, SlotGroup
from ..storage.local_limited import LimitedDequeStorage, LimitedExpiringDequeStorage
from ..storage.queue import QueueStorage

FifoSource = Callable[[], "LimitedFifo[Any] | None"]
#: What the readers of a limited queue read: head id, len, closed, full, bytes, dropped.
State = tuple[Any, int, bool, bool, int, int]
_NONE: State = (None, 0, False, False, 0, 0)


def limits_of(storage: Any) -> Limits | None:
    """The limits a storage declares (capability ``limits``), or ``None``."""
    caps = getattr(storage, "capabilities", None)
    if caps is None or not getattr(caps, "limits", False):
        return None
    limits: Limits | None = storage.limits()
    return limits


def declared_limits(storage: Any) -> Limits | None:
    """The limits a queue was declared with: :func:`limits_of`, or those a broker queue
    was opened with (a length bound only, kept as the broker's capacity)."""
    inner = getattr(storage, "inner", storage)  # a serializing storage's
    return limits_of(storage) or getattr(inner, "declared_limits", None)


def full(fifo: LimitedFifo[Any] | None) -> bool:
    """Whether ``fifo`` refuses the smallest push (never under ``drop_oldest``)."""
    return fifo is not None and fifo.is_full()


class QuotaReaders:
    """``bytes`` and ``dropped`` of one limited queue, and the masks of its changes."""

    __slots__ = ("_bits", "_last", "bytes", "dropped", "fifo")

    def __init__(self, name: str, fifo: FifoSource, group: SlotGroup) -> None:
        self.fifo = fifo
        before = group.all_bits()
        self.bytes: Slot[int] = group.slot(self._bytes, f"{name}.bytes")
        bytes_bit = group.all_bits() & ~before
        self.dropped: Slot[int] = group.slot(self._dropped, f"{name}.dropped")
        self._bits = (HEAD, LEN, CLOSED, IS_FULL, bytes_bit, bytes_bit << 1)
        self._last = self.state()

    @classmethod
    def of(cls, name: str, storage: QueueStorage[Any], group: SlotGroup) -> QuotaReaders | None:
        """The quota readers of a limited storage (in ``group``), else ``None``."""
        if limits_of(storage) is None:
            return None
        return cls(name, storage.limited_fifo, group)  # type: ignore[attr-defined]

    def quota(self) -> Quota | None:
        fifo = self.fifo()
        return None if fifo is None else fifo.quota

    def _bytes(self) -> int:
        fifo = self.fifo()
        return 0 if fifo is None else fifo.quota.bytes

    def _dropped(self) -> int:
        fifo = self.fifo()
        return 0 if fifo is None else fifo.quota.dropped_total()

    def state(self) -> State:
        fifo = self.fifo()
        if fifo is None:
            return _NONE
        return (fifo.head_id(), fifo.len(), fifo.is_closed(), fifo.is_full(),
                fifo.quota.bytes, fifo.quota.dropped_total())

    def changed(self) -> int:
        """The readers whose value moved since the last call (module docstring)."""
        now = self.state()
        last, self._last = self._last, now
        mask = 0
        for bit, was, new in zip(self._bits, last, now, strict=True):
            if was != new:
                mask |= bit
        if (last[1] == 0) != (now[1] == 0):
            mask |= IS_EMPTY
        return mask

    def readers(self) -> dict[str, Slot[int]]:
        return {"bytes": self.bytes, "dropped": self.dropped}


def full_rule(storage: QueueStorage[Any], cap: int | None) -> Callable[[], bool]:
    """The ``is_full`` reader's rule: the limits' when declared, else the capacity's."""
    if limits_of(storage) is not None:
        fifo: FifoSource = storage.limited_fifo  # type: ignore[attr-defined]
        return lambda: full(fifo())
    return (lambda: False) if cap is None else (lambda: storage.len() >= cap)


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


def stored_size(storage: Any, limits: Limits | None, value: Any) -> int | None:
    """The bytes ``value`` takes against a ``max_bytes`` limit (as ``storage`` stores it:
    through its serializer, if any); ``None`` without such a limit or for a value the
    size rule cannot measure."""
    if limits is None or limits.max_bytes is None:
        return None
    try:
        return value_size(storage.codec.encode(value) if hasattr(storage, "codec") else value)
    except UnsupportedValue:
        return None


def never_fits(name: str, limits: Limits | None, size: int | None) -> LimitExceeded | None:
    """The refusal of an element of ``size`` bytes larger than ``max_bytes`` (it fits
    under neither policy, however much room is made), else ``None``."""
    if limits is None or limits.max_bytes is None or size is None or size <= limits.max_bytes:
        return None
    return LimitExceeded(
        f"queue {name!r}: an element of {size} bytes never fits its max_bytes limit of "
        f"{limits.max_bytes}; store large payloads elsewhere and queue a reference, or "
        "raise the limit", cell=name, limit="max_bytes", value=limits.max_bytes)


def limited_deque(capacity: int | None, limits: Limits,
                  clock: Callable[[], float] | None,
                  ttl: float | None = None) -> QueueStorage[Any]:
    """The local deque of a cell declared with ``limits`` (``capacity`` is its
    ``max_length``: give one or the other), expiring with a ``ttl``."""
    if capacity is not None:
        raise ValueError("give the bound as Limits(max_length=...) or capacity=, not both")
    if ttl is not None:
        return LimitedExpiringDequeStorage(limits, ttl=ttl, clock=clock or time.time)
    return LimitedDequeStorage(limits, clock=clock)
