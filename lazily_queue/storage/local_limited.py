"""The in-process deque of a QueueCell declared with limits.

:class:`LimitedDequeStorage` is :class:`~.local.VecDequeStorage` over a
:class:`~lazily_queue.core.limited_fifo.LimitedFifo`: the same synchronous and awaitable
operations, checked against the limits. It has no ``reporting_ops`` fast path (a push
may drop elements); the cell invalidates every reader after each change of a limited
queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from ..core.dedup import DedupLimits
from ..core.limited_fifo import LimitedFifo
from ..core.limits import Limits
from .capabilities import StorageCapabilities
from .local import Clock, VecDequeStorage

T = TypeVar("T")


class LimitedDequeStorage(LimitedFifo[T], VecDequeStorage[T]):
    """The local deque with limits (``sync``, ``peek``, ``dedup``, ``messages``)."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, peek=True, dedup=True, messages=True,
                                       limits=True)

    def __init__(self, limits: Limits, elements: Iterable[T] = (), *,
                 dedup: DedupLimits | None = None, clock: Clock | None = None) -> None:
        VecDequeStorage.__init__(self, None, elements, dedup=dedup, clock=clock)
        self.limit(limits)

    def __repr__(self) -> str:
        return f"LimitedDequeStorage(len={self.len()}, {self.quota!r})"
