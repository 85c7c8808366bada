"""One link's share of a :class:`~lazily_transports.frame_budget.FrameBudget`: the frame
it is reading, reserved or waiting for room."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable

from ..frame_budget import FrameBudget

__all__ = ["FrameReservation"]


class FrameReservation:
    """The reservation of the frame a link is reading, one of ``owner``'s; ``resume`` is
    called when a frame that waited is granted (its link may read again)."""

    __slots__ = ("_resume", "budget", "owner", "reserved", "since", "wanted")

    def __init__(self, budget: FrameBudget, resume: Callable[[], None],
                 owner: Hashable = None) -> None:
        self.budget = budget
        self.owner = owner
        self._resume = resume
        #: Bytes reserved for the half-read frame (0: none).
        self.reserved = 0
        #: Bytes the half-read frame waits for (0: not waiting).
        self.wanted = 0
        #: Loop time since which the frame waits (``None``: not waiting).
        self.since: float | None = None

    def update(self, completed: bool, expected: int | None) -> bool:
        """After a chunk was split into frames: ``completed`` says frames came out of it,
        ``expected`` is the size of the frame left half-read (``None``: none, or its
        length prefix is not in). True while that frame waits: read nothing more."""
        if completed:
            self.drop()
        if expected is None or self.reserved or self.wanted:
            return bool(self.wanted)
        if self.budget.reserve(self, expected, self.owner):
            self.reserved = expected
            return False
        self.wanted = expected
        self.since = asyncio.get_running_loop().time()
        return True

    def budget_granted(self, size: int) -> None:
        self.reserved, self.wanted, self.since = size, 0, None
        self._resume()

    def drop(self) -> None:
        """Give back what is reserved, or stop waiting (the frame is whole, or the link
        closed)."""
        if self.reserved:
            reserved, self.reserved = self.reserved, 0
            self.budget.release(reserved, self.owner)
        if self.wanted:
            self.wanted, self.since = 0, None
            self.budget.cancel(self)
