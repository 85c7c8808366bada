"""FairBudget: a member's budget of client requests in flight, served fairly.

A slot that frees goes to the waiting client holding the fewest slots (equal: the one
that came first), not to the first waiter, so a light client is not queued behind a
greedy one; and a small reserve beyond the budget is kept for light clients (holding
fewer than ``light`` slots), so one is admitted at once while a flood holds the rest.
Like :class:`~.budget.Budget`, a slot is taken without a suspension while there is room.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FairBudget:
    """``size`` slots for every client and ``reserve`` more for clients holding fewer
    than ``light``; waiters holding fewer slots first (module docstring).

    ``free`` may be taken directly (``free -= 1``) while :attr:`ready`.
    """

    __slots__ = ("_heap", "_order", "free", "light", "reserve", "size")

    def __init__(self, size: int, *, reserve: int = 0, light: int = 0) -> None:
        self.reserve = max(0, reserve)
        self.size = size + self.reserve
        self.free = self.size
        self.light = light
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def used(self) -> int:
        return self.size - self.free

    @property
    def ready(self) -> bool:
        """Whether any client's :meth:`take` would return without waiting."""
        return self.free > self.reserve and not self._heap

    @property
    def waiting(self) -> int:
        """Clients waiting for a slot."""
        return sum(1 for _, _, fut in self._heap if not fut.done())

    def _room(self, held: int) -> bool:
        return self.free > (0 if held < self.light else self.reserve)

    async def take(self, held: int) -> None:
        """Take a slot for a client already holding ``held`` slots, waiting behind the
        waiters holding fewer (and those holding as many that came first)."""
        # Every live waiter lacks room (a slot given back is handed over at once), so
        # one with room now is ahead of them all.
        if self._room(held):
            self.free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (held, next(self._order), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.give()  # granted as the waiter was cancelled: pass it on
            raise  # else its entry is skipped when reached

    def give(self) -> None:
        """Give a slot back (to the first waiter with room, if any)."""
        self.free += 1
        heap = self._heap
        while heap:
            held, _, fut = heap[0]
            if fut.done():
                heapq.heappop(heap)
            elif self._room(held):
                heapq.heappop(heap)
                self.free -= 1
                fut.set_result(None)
            else:
                return
