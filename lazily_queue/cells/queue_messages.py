"""The message surface of a QueueCell: pops that hand out ids and enqueue times.

Over a backend that declares ``messages`` (the local deque, a node's or a client's
replicated queue), ``pop_message()`` / ``pop_messages(n)`` / ``async for m in
q.messages()`` give :class:`~.message.Message` objects, and elements the cell gives
back (an iteration that ends early, a pop whose caller went away) return to the head
under the ids they had. ``items()`` over such a backend gives back the same way, so a
plain consumer never renumbers elements either.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar, cast

from ..core import ids
from ..core.ids import Run
from ..core.queue import ALL_READERS, UNPOP, QueuePopError, pop_mask, transition_mask
from ..core.work_items import check_count
from ..errors import QueueClosed, UnsupportedOperation
from ..reactive import Context
from ..storage.queue import (
    HeaderQueueStorage,
    MessageQueueStorage,
    QueueStorage,
    as_headers,
    as_messages,
)
from .deadline import Deadline, no_wait
from .loop_owner import LoopOwned
from .message import Message, headers_of, messages_of, stamp_of
from .prefetch import prefetch_size, prefetched

T = TypeVar("T")
R = TypeVar("R")

_POP_CLOSED = QueuePopError.Closed

Taken = tuple[list[T], list[Run], list[list[Any]]]
"""What a message pop took: values, their id runs, ``[[id, headers], ...]``."""
log = logging.getLogger(__name__)


class QueueMessages(LoopOwned, Generic[T]):
    """Mixed into :class:`~.queue.QueueCell` (which sets the attributes below)."""

    name: str
    ctx: Context
    _storage: QueueStorage[T]
    _capacity: int | None
    _observed: bool
    _invalidate: Callable[[int], None]
    _has_element: Callable[[], bool]
    _delayed_bit: int
    _unreachable: Callable[[], Exception | None] | None

    def _counts(self) -> tuple[int, int]:
        """Ready and delayed counts (:mod:`.queue_options`, before this in the cell)."""
        raise NotImplementedError

    async def _wait_for_element(self, has_element: Callable[[], bool]) -> None:
        """Wait for a ready element (:mod:`.queue_options`, before this in the cell)."""
        raise NotImplementedError
    #: The iteration's prefetch: its default and the first take (:mod:`.prefetch`).
    PREFETCH: int
    FIRST_PREFETCH: int

    def _stamped(self) -> MessageQueueStorage[T]:
        storage = as_messages(self._storage)
        if storage is None:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} does not keep message ids; "
                "use pop() / pop_many()")
        return storage

    async def _poll_stamped(self, n: int) -> Taken[T] | QueuePopError:
        storage = self._stamped()
        check_count(n)
        pre, delayed = self._counts()
        with_headers = as_headers(storage)
        result: Taken[T] | QueuePopError
        if with_headers is not None:
            result = await with_headers.poll_headers(n)
        else:
            stamped = await storage.poll_stamped(n)
            result = stamped if isinstance(stamped, QueuePopError) else (*stamped, [])
        if not self._observed and not isinstance(result, QueuePopError):
            mask = 0  # a synchronous backend reports nothing: invalidate as its pops would
            for i in range(len(result[0])):
                mask |= pop_mask(pre - i, self._capacity)
            if self._counts()[1] != delayed:  # elements fell due first: all moved
                mask = ALL_READERS | self._delayed_bit
            self._invalidate(mask)
        return result

    async def _unpoll_stamped(self, values: list[T], runs: list[Run],
                              headers: list[list[Any]] | None = None) -> None:
        pre = self._storage.len()
        storage = self._stamped()
        if headers:  # only a backend with headers gave some
            await cast(HeaderQueueStorage[T], storage).unpoll_headers(values, runs, headers)
        else:
            await storage.unpoll_stamped(values, runs)
        if not self._observed:
            mask = 0
            for i in range(len(values)):
                mask |= transition_mask(UNPOP, pre + i, self._capacity, False)
            self._invalidate(mask)

    async def _until_taken(self, take: Callable[[], Awaitable[R | QueuePopError]],
                           deadline: Deadline) -> R:
        """``take()`` until it takes something, waiting for an element between tries
        within ``deadline``; :class:`QueueClosed` once the queue is closed and drained."""
        while True:
            result = await take()
            if not isinstance(result, QueuePopError):
                return result
            if result is _POP_CLOSED:
                raise QueueClosed(f"{self.name}: queue is closed and drained")
            async with deadline.waiting(f"pop from queue {self.name!r}: no element",
                                        self._unreachable):
                await self._wait_for_element(self._has_element)

    async def _pop_stamped(self, n: int, deadline: Deadline | None = None) -> Taken[T]:
        return await self._until_taken(lambda: self._poll_stamped(n),
                                       Deadline(None) if deadline is None else deadline)

    async def poll_messages(
        self, n: int = 1, *, timeout: float | None = None
    ) -> list[Message[T]] | QueuePopError:
        """Remove up to ``n`` of the oldest elements without waiting, as messages (ids,
        enqueue times): a non-empty list, or ``Empty`` / ``Closed`` (``timeout`` has no
        wait to bound: :mod:`.deadline`)."""
        self._own()
        no_wait(timeout)
        result = await self._poll_stamped(n)
        return result if isinstance(result, QueuePopError) else messages_of(*result)

    async def pop_message(self, *, timeout: float | None = None) -> Message[T]:
        """:meth:`pop`, as a :class:`Message` (its id, enqueue time); raises
        :class:`QueueClosed` once the queue is closed and drained."""
        return (await self.pop_messages(1, timeout=timeout))[0]

    async def pop_messages(self, n: int, *, timeout: float | None = None) -> list[Message[T]]:
        """:meth:`pop_many`, as messages: wait for one element, take up to ``n``
        (``timeout`` bounds the wait, as :meth:`pop`'s)."""
        self._own()
        return messages_of(*await self._pop_stamped(n, Deadline(timeout)))

    async def give_back(self, messages: list[Message[T]]) -> None:
        """Return messages taken by :meth:`pop_messages` and not handled to the head, in
        order, under their ids, enqueue times and headers (capacity and the closed flag
        are not checked: they were in the queue). A message id the queue never gave out
        is refused (``ValueError`` locally, ``ProposalRejected`` replicated)."""
        self._own()
        runs: list[Run] = []
        for m in messages:
            if not isinstance(m, Message):
                raise TypeError(f"{self.name}: give_back takes the Message objects "
                                f"pop_messages returned, got {type(m).__name__}")
            ids.append(runs, m.id, 1, stamp_of(m))
        await self._unpoll_stamped([m.value for m in messages], runs, headers_of(messages))

    def messages(self, *, prefetch: int | None = None) -> AsyncGenerator[Message[T], None]:
        """``items()``, as messages (``async for m in q.messages()``); what was taken
        and not handed out goes back to the head under its ids."""
        self._own()
        return self._prefetched(messages_of, lambda m: m.value, prefetch)

    def _stamped_items(self, prefetch: int | None) -> AsyncGenerator[T, None]:
        return self._prefetched(lambda values, runs, headers: values, lambda v: v, prefetch)

    def _prefetched(
        self, make: Callable[[list[T], list[Run], list[list[Any]]], list[R]],
        value_of: Callable[[R], T], prefetch: int | None,
    ) -> AsyncGenerator[R, None]:
        self._stamped()
        size = prefetch_size(prefetch, self.PREFETCH)
        if self._storage.capabilities.sync:
            size = 1
        last: list[Run] = []
        last_headers: list[list[Any]] = []

        async def take(n: int) -> list[R]:
            self._own()  # the loop iterating, which need not be the one that made it
            values, runs, headers = await self._pop_stamped(n)
            last[:] = runs
            last_headers[:] = headers
            return make(values, runs, headers)

        async def give_back(taken: list[R]) -> None:
            # What is left is the end of the last take: its ids are the last runs' tail.
            runs = ids.tail(last, len(taken))
            headers = None
            if last_headers:
                kept = {i for i, _ in ids.expand(runs)}
                headers = [entry for entry in last_headers if entry[0] in kept]
            await self._give_back_stamped([value_of(r) for r in taken], runs, headers)

        return prefetched(take, give_back, size, self.FIRST_PREFETCH, QueueClosed,
                          owner=self._storage)

    async def _give_back(self, values: list[T]) -> None:
        """Put elements an iteration took and never handed out back (without ids)."""
        await self._give_back_stamped(values, None)

    async def _give_back_stamped(self, values: list[T], runs: list[Run] | None,
                                 headers: list[list[Any]] | None = None) -> None:
        rest = getattr(self._storage, "give_back_rest", None)
        if rest is not None and runs is not None:  # retried until it applies: it logs
            await rest(values, runs, headers)
            return
        try:
            if runs is None:
                await self._storage.unpoll(values)
            else:
                await self._unpoll_stamped(values, runs, headers)
        except Exception as exc:
            outcome = ("are lost" if getattr(exc, "applied", False) is not None else
                       "are lost unless an earlier attempt, whose answer was lost, put them "
                       "back")
            log.error("%s: %d prefetched element(s) could not be put back and %s (pops are "
                      "at most once)", self.name, len(values), outcome, exc_info=True)

