"""The in-process deques of a QueueCell declared with limits.

:class:`LimitedDequeStorage` is :class:`~.local.VecDequeStorage` over a
:class:`~lazily_queue.core.limited_fifo.LimitedFifo` (the deque first, so its takes make
due elements ready before the limited FIFO counts them): the same synchronous and
awaitable operations, checked against the limits. It has no ``reporting_ops`` fast path (a push
may drop elements); the cell invalidates every reader after each change of a limited
queue. :class:`LimitedExpiringDequeStorage` is the same over the expiring deque (a cell
declared with limits and a ``ttl``): expired elements leave as pops do, freeing room.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TypeVar

from ..core.dedup import DedupLimits
from ..core.limited_fifo import LimitedFifo
from ..core.limits import Limits
from .capabilities import StorageCapabilities
from .local import Clock, VecDequeStorage
from .local_expiry import ExpiringDequeStorage

T = TypeVar("T")


class LimitedDequeStorage(VecDequeStorage[T], LimitedFifo[T]):
    """The local deque with limits (``sync``, ``peek``, ``dedup``, ``messages``,
    ``headers``, ``scheduling``)."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, peek=True, dedup=True, messages=True,
                                       limits=True, headers=True, scheduling=True)

    def __init__(self, limits: Limits, elements: Iterable[T] = (), *,
                 dedup: DedupLimits | None = None, clock: Clock | None = None) -> None:
        VecDequeStorage.__init__(self, None, elements, dedup=dedup, clock=clock)
        self.limit(limits)

    def __repr__(self) -> str:
        return f"LimitedDequeStorage(len={self.len()}, {self.quota!r})"


class LimitedExpiringDequeStorage(ExpiringDequeStorage[T], LimitedFifo[T]):
    """The expiring local deque with limits (module docstring). The expiring deque comes
    first: each change is counted against the limits before it is reported."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, observable=True, peek=True, dedup=True,
                                       messages=True, expiry=True, headers=True,
                                       scheduling=True, limits=True)

    def __init__(self, limits: Limits, *, ttl: float | None = None,
                 clock: Clock = time.time, dedup: DedupLimits | None = None) -> None:
        ExpiringDequeStorage.__init__(self, None, ttl=ttl, clock=clock, dedup=dedup)
        self.limit(limits)

    def __repr__(self) -> str:
        return f"LimitedExpiringDequeStorage(len={self.len()}, {self.quota!r})"

    def _took(self, n: int) -> None:
        self.quota.popped(n)
