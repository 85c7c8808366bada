"""Adaptive prefetch of the iterating consumers: how much the next batched take asks for.

A consumer that takes several elements in one commit (``QueueCell.items``,
``WorkQueueCell.deliveries``) starts at a small batch and asks for twice as many (up to
its ``prefetch``) while it handed the last full batch out faster than the take took to
commit, and half as many when it was slower, so a slow consumer holds few elements.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

from ..errors import shown

T = TypeVar("T")
log = logging.getLogger(__name__)


def prefetch_size(prefetch: int | None, default: int) -> int:
    """``prefetch`` (``default`` when ``None``); a ``ValueError`` unless an int >= 1."""
    size = default if prefetch is None else prefetch
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"prefetch must be an int >= 1, got {shown(prefetch)}")
    return size


def next_take(take: int, size: int, *, full: bool, took: float, handed_out: float) -> int:
    """The next batch after a take of ``take`` (``full``: it got all it asked for) that
    took ``took`` seconds to commit and whose elements were handed out in ``handed_out``."""
    if handed_out < took:
        return min(size, take * 2) if full else take
    return max(1, take // 2)


class Taken(Generic[T]):
    """What one iteration over ``owner`` (a storage) took and has not handed out yet."""

    __slots__ = ("__weakref__", "buffer", "give_back", "owner")

    def __init__(self, owner: object, buffer: deque[T],
                 give_back: Callable[[list[T]], Awaitable[None]]) -> None:
        self.owner = owner
        self.buffer = buffer
        self.give_back = give_back

    def forget(self) -> None:
        """The iteration is ending: it gives back what is left itself."""
        _TAKEN.discard(self)


#: The iterations alive now that took elements over a storage (see :func:`return_taken`).
_TAKEN: weakref.WeakSet[Taken[Any]] = weakref.WeakSet()


def hold(owner: object, buffer: deque[T],
         give_back: Callable[[list[T]], Awaitable[None]]) -> Taken[T]:
    """Register ``buffer``, what an iteration over ``owner`` took and has not handed out
    yet, for :func:`return_taken` (the iteration takes its leftovers out of it before
    giving them back itself)."""
    taken = Taken(owner, buffer, give_back)
    _TAKEN.add(taken)
    return taken


async def return_taken(storages: Iterable[object]) -> None:
    """Give back what the iterations over ``storages`` took and have not handed out.

    A client calls it before it closes (a node before it stops): a loop that breaks out
    of ``async for x in q`` or ``deliveries()`` gives its prefetched elements (or
    releases its prefetched leases) only when the iterator is finalized, which runs after
    the client has closed (and then fails: the elements are lost, the leases expire)."""
    owned = {id(storage) for storage in storages}
    giving: list[Awaitable[None]] = []
    for taken in list(_TAKEN):
        if id(taken.owner) in owned and taken.buffer:
            elements = list(taken.buffer)
            taken.buffer.clear()
            giving.append(taken.give_back(elements))
    # Together: a member without quorum answers each after about a second, not in turn.
    for failed in await asyncio.gather(*giving, return_exceptions=True):
        if isinstance(failed, Exception):
            log.warning("could not give back what an iteration held: %s", failed)


async def prefetched(
    take_many: Callable[[int], Awaitable[list[T]]],
    give_back: Callable[[list[T]], Awaitable[None]],
    size: int,
    first: int,
    end: type[BaseException],
    owner: object = None,
) -> AsyncGenerator[T, None]:
    """Yield what ``take_many(n)`` returns, one by one, in batches sized by
    :func:`next_take` (the first at most ``first``), until it raises ``end``; when the
    iteration ends early, what was taken and not yet yielded goes to ``give_back`` (or
    to :func:`return_taken` of ``owner``, the storage taken from, first)."""
    take = min(size, first)
    clock = asyncio.get_running_loop().time
    buffer: deque[T] = deque()
    held = None if owner is None else hold(owner, buffer, give_back)
    try:
        while True:
            started = clock()
            try:
                buffer.extend(await take_many(take))
            except end:
                return
            committed = clock()
            full = len(buffer) == take
            while buffer:
                yield buffer.popleft()
            take = next_take(take, size, full=full, took=committed - started,
                             handed_out=clock() - committed)
    finally:
        if held is not None:
            held.forget()
        if buffer:  # taken out first: return_taken must not give them back again
            elements = list(buffer)
            buffer.clear()
            await asyncio.shield(give_back(elements))
