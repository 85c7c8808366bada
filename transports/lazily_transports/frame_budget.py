"""FrameBudget: a bound on the bytes a process holds in frames it has only partly
received, shared by the links given it (``DataChannel.use_frame_budget``).

A link whose frame's size is known (its length prefix, or a WebSocket frame's header)
reserves that frame's whole size until the frame is whole or the link closes. A frame
that does not fit waits, its link reading nothing more, until it does: waiting frames
are granted in the order they asked, so none is passed over for good by smaller ones,
and a frame is granted whenever nothing else is held, so one frame larger than the
budget is still read (alone).

With a ``share``, the frames of one owner (the links given the budget with the same
``owner``) hold at most ``share`` bytes of it (one frame whatever its size when that
owner holds nothing): a frame waiting for its own owner's share lets the frames of
other owners that came after it pass, so one owner never takes the whole budget.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

__all__ = ["BudgetHolder", "FrameBudget"]


class BudgetHolder(Protocol):
    """What waits for room: told once its reservation is granted."""

    def budget_granted(self, size: int) -> None: ...


def _check(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"a frame budget's {what} is a positive int (bytes), got {value!r}")


class FrameBudget:
    """Bytes of partly received frames held by the links sharing it (module docstring).

    Not thread-safe: its links run on one event loop.
    """

    def __init__(self, limit: int, *, share: int | None = None) -> None:
        _check(limit, "limit")
        if share is not None:
            _check(share, "share")
        self.limit = limit
        #: Bytes the frames of one owner hold at most (the limit: no share).
        self.share = limit if share is None else min(share, limit)
        #: Bytes reserved now by the frames being read.
        self.held = 0
        self._owners: dict[Hashable, int] = {}
        self._waiting: list[tuple[BudgetHolder, int, Hashable]] = []
        #: Frames that had to wait for room, in all.
        self.waited = 0

    @property
    def waiting(self) -> int:
        """Frames waiting for room now."""
        return len(self._waiting)

    def held_by(self, owner: Hashable) -> int:
        """Bytes reserved now by the frames of ``owner``."""
        return self._owners.get(owner, 0)

    def _owner_fits(self, owner: Hashable, size: int) -> bool:
        held = self._owners.get(owner, 0)
        return owner is None or held == 0 or held + size <= self.share

    def _fits(self, size: int) -> bool:
        return self.held == 0 or self.held + size <= self.limit

    def _take(self, owner: Hashable, size: int) -> None:
        self.held += size
        if owner is not None:
            self._owners[owner] = self._owners.get(owner, 0) + size

    def reserve(self, holder: BudgetHolder, size: int, owner: Hashable = None) -> bool:
        """Reserve ``size`` bytes for ``holder``'s frame, one of ``owner``'s (``None``:
        no owner, no share): True when granted now, else ``holder`` waits (in order) and
        :meth:`BudgetHolder.budget_granted` says when."""
        if (self._owner_fits(owner, size) and self._fits(size)
                and not any(self._ahead(entry, owner) for entry in self._waiting)):
            self._take(owner, size)
            return True
        self._waiting.append((holder, size, owner))
        self.waited += 1
        return False

    def _ahead(self, entry: tuple[BudgetHolder, int, Hashable], owner: Hashable) -> bool:
        """Whether the waiting ``entry`` goes before a new frame of ``owner``: it is one
        of the same owner's, or waits for room in the whole budget, not in its share."""
        _holder, size, waiting_owner = entry
        return (owner is not None and waiting_owner == owner) or self._owner_fits(
            waiting_owner, size)

    def release(self, size: int, owner: Hashable = None) -> None:
        """Give back a granted reservation of ``size`` bytes of ``owner``'s."""
        self.held = max(0, self.held - size)
        if owner is not None and owner in self._owners:
            left = self._owners[owner] - size
            if left > 0:
                self._owners[owner] = left
            else:
                del self._owners[owner]
        self._grant()

    def cancel(self, holder: BudgetHolder) -> None:
        """``holder`` no longer waits (its link closed)."""
        before = len(self._waiting)
        self._waiting = [entry for entry in self._waiting if entry[0] is not holder]
        if len(self._waiting) != before:
            self._grant()

    def _grant(self) -> None:
        if not self._waiting:
            return
        granted: list[tuple[BudgetHolder, int]] = []
        kept: list[tuple[BudgetHolder, int, Hashable]] = []
        at_share: set[Hashable] = set()
        full = False
        for entry in self._waiting:
            holder, size, owner = entry
            if full or owner in at_share:
                kept.append(entry)
            elif not self._owner_fits(owner, size):
                at_share.add(owner)  # its owner's later frames wait behind it
                kept.append(entry)
            elif not self._fits(size):
                full = True  # none passes it for good: the later ones wait too
                kept.append(entry)
            else:
                self._take(owner, size)
                granted.append((holder, size))
        self._waiting = kept
        for holder, size in granted:
            holder.budget_granted(size)
