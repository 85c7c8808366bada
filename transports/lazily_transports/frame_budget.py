"""FrameBudget: a bound on the bytes a process holds in frames it has only partly
received, shared by the links given it (``DataChannel.use_frame_budget``).

A link whose frame's length prefix is in reserves that frame's whole size until the
frame is whole or the link closes. A frame that does not fit waits, its link reading
nothing more, until it does: waiting frames are granted in the order they asked, so
none is passed over for good by smaller ones, and a frame is granted whenever nothing
else is held, so one frame larger than the budget is still read (alone).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

__all__ = ["BudgetHolder", "FrameBudget"]


class BudgetHolder(Protocol):
    """What waits for room: told once its reservation is granted."""

    def budget_granted(self, size: int) -> None: ...


class FrameBudget:
    """Bytes of partly received frames held by the links sharing it (module docstring).

    Not thread-safe: its links run on one event loop.
    """

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"a frame budget is a positive int (bytes), got {limit!r}")
        self.limit = limit
        #: Bytes reserved now by the frames being read.
        self.held = 0
        self._waiting: deque[tuple[BudgetHolder, int]] = deque()
        #: Frames that had to wait for room, in all.
        self.waited = 0

    @property
    def waiting(self) -> int:
        """Frames waiting for room now."""
        return len(self._waiting)

    def _fits(self, size: int) -> bool:
        return self.held == 0 or self.held + size <= self.limit

    def reserve(self, holder: BudgetHolder, size: int) -> bool:
        """Reserve ``size`` bytes for ``holder``'s frame: True when granted now, else
        ``holder`` waits (in order) and :meth:`BudgetHolder.budget_granted` says when."""
        if not self._waiting and self._fits(size):
            self.held += size
            return True
        self._waiting.append((holder, size))
        self.waited += 1
        return False

    def release(self, size: int) -> None:
        """Give back a granted reservation of ``size`` bytes."""
        self.held = max(0, self.held - size)
        self._grant()

    def cancel(self, holder: BudgetHolder) -> None:
        """``holder`` no longer waits (its link closed)."""
        before = len(self._waiting)
        self._waiting = deque(entry for entry in self._waiting if entry[0] is not holder)
        if len(self._waiting) != before:
            self._grant()

    def _grant(self) -> None:
        waiting = self._waiting
        while waiting and self._fits(waiting[0][1]):
            holder, size = waiting.popleft()
            self.held += size
            holder.budget_granted(size)
