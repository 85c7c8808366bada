"""The many-element operations of :class:`~.queue.QueueCell`: ``poll_many``,
``pop_many``, ``push_many`` and the prefetching iteration (``async for``, ``items()``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable
from typing import Generic, TypeVar

from ..core.limits import Limits
from ..core.numbers import wait_limit
from ..core.queue import QueuePopError
from ..core.work_items import check_count
from ..errors import QueueClosed
from ..storage.queue import SyncQueueStorage
from ..storage.runs import together
from .deadline import Deadline, no_wait
from .prefetch import prefetch_size, prefetched
from .push_checks import values_of
from .queue_messages import QueueMessages

T = TypeVar("T")

#: The most elements one pop takes for ``async for`` over a replicated backend.
DEFAULT_PREFETCH = 256
#: What the first pop of an iteration takes (at most the prefetch).
FIRST_PREFETCH = 32



class QueueBatches(QueueMessages[T], Generic[T]):
    """Mixed into :class:`~.queue.QueueCell` (which sets the attributes below)."""

    _sync: SyncQueueStorage[T] | None
    _limits: Limits | None
    try_pop: Callable[[], T | QueuePopError]

    def capacity(self) -> int | None:
        raise NotImplementedError

    async def push(self, value: T, *, timeout: float | None = None) -> None:
        raise NotImplementedError

    async def poll_many(
        self, n: int, *, timeout: float | None = None
    ) -> list[T] | QueuePopError:
        """Remove up to ``n`` of the oldest elements at once without waiting: a non-empty
        list in order, or ``Empty`` / ``Closed``. Over a replicated backend, one commit
        (``timeout`` has no wait to bound: :mod:`.deadline`)."""
        self._own()
        check_count(n)
        no_wait(timeout)
        if self._sync is None:
            return await self._storage.poll_many(n)
        taken: list[T] = []
        while len(taken) < n:
            result = self.try_pop()
            if isinstance(result, QueuePopError):
                return taken or result
            taken.append(result)
        return taken

    async def pop_many(self, n: int, *, timeout: float | None = None) -> list[T]:
        """Wait for at least one element, then pop up to ``n`` at once (in order); raises
        :class:`QueueClosed` once the queue is closed and drained. At most once, as
        :meth:`pop`: a process that crashes after the pop committed loses the elements.
        ``timeout`` bounds the wait, as :meth:`pop`'s."""
        return await self._until_taken(lambda: self.poll_many(n), Deadline(timeout))

    async def push_many(self, values: Iterable[T], *, timeout: float | None = None) -> None:
        """Push every value in order, waiting for room as :meth:`push` does. Over a
        replicated backend an unbounded queue takes them in runs of
        :data:`~lazily_queue.storage.runs.MANY_AT_ONCE`, each in one commit where it
        fits; a bounded one (a capacity or limits) pushes them one after another, each
        waiting for room or refused as :meth:`push` is. A value the cluster refuses
        (``UnsupportedValue``, ``MessageTooLarge``) refuses them all before any is sent.
        Raises :class:`QueueClosed` once closed (the values before it were pushed). It
        takes no message ids: for exactly-once, push each value with its own
        ``msg_id``. ``timeout`` bounds each wait for room, as :meth:`push`'s."""
        self._own()
        pending = values_of(values, "push")
        wait_limit(timeout)  # a timeout that is no number of seconds is refused here
        one_by_one = (self._sync is not None or self.capacity() is not None
                      or self._limits is not None)
        offer_many = None if one_by_one else getattr(self._storage, "offer_many", None)
        if offer_many is None:  # (offer_many checks every value before it proposes one)
            check = getattr(self._storage, "check_values", None)
            if check is not None:
                check(pending)  # a value the cluster refuses refuses the batch, not its rest
        if one_by_one:
            for value in pending:
                await self.push(value, timeout=timeout)
            return
        if offer_many is not None:  # an unbounded queue: nothing to wait for
            results = await offer_many(pending)
        else:
            results = await together(self._storage.offer, pending)
        if any(result is not None for result in results):
            raise QueueClosed.push_refused(self.name)

    def __aiter__(self) -> AsyncGenerator[T, None]:
        return self.items()

    def items(self, *, prefetch: int | None = None) -> AsyncGenerator[T, None]:
        """Yield elements until the queue is closed and drained (``async for x in q``).

        Over a replicated backend each pop takes up to ``prefetch`` elements in one
        commit (default :data:`DEFAULT_PREFETCH`) and hands them out one by one; when
        the iteration ends early (``break``, cancellation), those not handed out go back
        to the head, in order. A process that crashes loses them: pops are at most once,
        and the window is the prefetch. The first pop takes at most
        :data:`FIRST_PREFETCH`; the next one takes twice as many (up to ``prefetch``)
        while the consumer handed the last batch out faster than its pop took to commit,
        and half as many when it was slower, so a slow consumer holds few elements. A
        synchronous backend pops one at a time.
        """
        self._own()
        if self._storage.capabilities.messages:
            return self._stamped_items(prefetch)  # gives back under the same ids
        size = prefetch_size(prefetch, DEFAULT_PREFETCH)
        if self._sync is not None:
            size = 1
        return prefetched(self.pop_many, self._give_back, size, FIRST_PREFETCH, QueueClosed,
                          owner=self._storage)
