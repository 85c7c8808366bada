"""The local deque with message expiry (capability ``expiry``).

:class:`ExpiringDequeStorage` is :class:`~.local.VecDequeStorage` whose elements may
expire (:mod:`lazily_queue.core.expiry`): a default TTL for every element and a
per-message TTL given with a push's options (``offer_options``). Time is its ``clock``
(seconds, as ``time.time``, the default) read in milliseconds at each push and pop: an
element expired at a pop's reading is removed (counted) and never returned. It reports
every transition to its listener (capability ``observable``): a pop that removes expired
elements changes more than one element at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, TypeVar

from ..core import ids
from ..core.dedup import DedupLimits
from ..core.expiry import Expiry, optional_ttl_ms
from ..core.expiry_take import expire_queue_head, pop_live
from ..core.fifo import Fifo
from ..core.headers import Headers
from ..core.ids import Run
from ..core.push_options import PushOptions
from ..core.queue import CLOSE, DELAY, POP, PUSH, RESET, UNPOP, QueuePopError, QueuePushError
from .capabilities import StorageCapabilities
from .local import Clock, VecDequeStorage, _ms
from .queue import QueueChangeListener

T = TypeVar("T")


class ExpiringDequeStorage(VecDequeStorage[T]):
    """A local FIFO whose elements expire ``ttl`` seconds after their push (``None``: only
    those pushed with a TTL of their own expire)."""

    __slots__ = ("_listener", "_now", "expiry")

    capabilities = StorageCapabilities(sync=True, observable=True, peek=True, dedup=True,
                                       messages=True, expiry=True, headers=True,
                                       scheduling=True)

    def __init__(self, capacity: int | None = None, elements: Iterable[T] = (), *,
                 ttl: float | None = None, clock: Clock = time.time,
                 dedup: DedupLimits | None = None) -> None:
        self.expiry = Expiry(optional_ttl_ms(ttl))
        super().__init__(capacity, elements, dedup=dedup, clock=clock)
        self._now = _ms(clock)
        self._listener: QueueChangeListener | None = None

    def set_change_listener(self, listener: QueueChangeListener | None) -> None:
        self._listener = listener

    def _report(self, op: int, pre: int) -> None:
        if self._listener is not None:
            self._listener(op, pre)

    def _pop_run(self, k: int = 1, taken: dict[int, Headers] | None = None
                 ) -> tuple[list[Any], list[Run]] | QueuePopError:
        """The FIFO's own pop of the ``k`` oldest elements (a deque with limits counts
        them), each transition reported as ``k`` pops of one would be; with ``taken``,
        the headers of the elements popped land there."""
        pre = self.len()
        result = Fifo.pop_headers(self, k)
        if isinstance(result, QueuePopError):
            return result
        popped = len(result[0])
        self._took(popped)
        if taken is not None:
            taken.update((i, h) for i, h in result[2])
        for i in range(popped):
            self._report(POP, pre - i)
        return result[0], result[1]

    def _took(self, n: int) -> None:
        """The ``n`` oldest elements left through :meth:`_pop_run` (a deque with limits
        counts them)."""

    def expired_count(self) -> int:
        """Elements that expired (removed without being handed out)."""
        return self.expiry.expired

    def expire(self) -> int:
        """Remove the expired elements at the head now; returns how many."""
        return expire_queue_head(self, self.expiry, self._now(), self._pop_run,
                                 pop_run=self._pop_run)

    def try_push(self, value: T) -> QueuePushError | None:
        pre = self.len()
        err = super().try_push(value)
        if err is None:
            self._report(PUSH, pre)
        return err

    def try_pop(self) -> T | QueuePopError:
        result = self.pop_stamped(1)
        return result if isinstance(result, QueuePopError) else result[0][0]

    def pop_stamped(self, n: int) -> tuple[list[T], list[Run]] | QueuePopError:
        if self._delayed:
            self.promote_now()
        result, _ = pop_live(self, self.expiry, self._now(), n, self._pop_run,
                             pop_run=self._pop_run)
        return result

    def pop_headers(
        self, n: int
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        """Live elements only, as :meth:`pop_stamped` takes them, with their headers."""
        if self._delayed:
            self.promote_now()
        if not self._headers:
            result = self.pop_stamped(n)
            return result if isinstance(result, QueuePopError) else (*result, [])
        taken: dict[int, Headers] = {}
        def pop(k: int = 1, /) -> tuple[list[Any], list[Run]] | QueuePopError:
            return self._pop_run(k, taken)
        live, _ = pop_live(self, self.expiry, self._now(), n, pop, pop_run=pop)
        if isinstance(live, QueuePopError):
            return live
        values, runs = live
        return values, runs, [[i, taken[i]] for i, _ in ids.expand(runs) if i in taken]

    def _promoted(self, pre: int, n: int) -> None:
        for i in range(n):
            self._report(PUSH, pre + i)

    def _push_options(self, value: T, options: PushOptions,
                      due: int | None) -> QueuePushError | None:
        pre, now = self.len(), self._now()
        if due is not None and due <= now:
            due = None
        err = self.push_headers(value, now, options.headers, due)
        if err is None:
            if options.ttl_ms is not None:
                self.expiry.note(self.next_id() - 1, now, options.ttl_ms)
            self._report(PUSH if due is None else DELAY, pre)
        return err

    def try_close(self) -> None:
        was_closed = self.is_closed()
        super().try_close()
        if not was_closed:
            self._report(CLOSE, self.len())

    def push_front(self, value: T, stamp: int | None = None) -> None:
        pre = self.len()
        super().push_front(value, stamp)
        self._report(UNPOP, pre)

    def unpop_stamped(self, values: list[T], runs: list[Run],
                      headers: list[tuple[int, Headers]] | None = None) -> None:
        pre = self.len()
        super().unpop_stamped(values, runs, headers)
        for run in runs:
            for element_id in range(run[0], run[0] + run[1]):
                self.expiry.give_back(element_id)
        for i in range(len(values)):
            self._report(UNPOP, pre + i)

    def clear(self) -> int:
        pre = self.len()
        removed = super().clear()
        self.expiry.clear_deadlines()
        if removed:
            self._report(RESET, pre)
        return removed
