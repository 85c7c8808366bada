"""The removals of :class:`~.work.WorkQueueCore` outside the claim cycle (a base of the
core): dead letters redriven, items purged, and the expiry's discards at the head."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from itertools import islice
from typing import TYPE_CHECKING

from .stamps import StampIndex
from .work_items import DeadLetter, PendingItem
from .work_masks import IS_EMPTY, PENDING_LEN, WorkTransition, change_mask
from .work_retained import RetainedPending
from .work_schedule import WorkSchedule


class WorkRemovals:
    """Redrive, purge and the discards of expired items at the head."""

    if not TYPE_CHECKING:  # no instance dict: the core's slots hold the state
        __slots__ = ()

    _pending: deque[PendingItem]
    _dead: list[DeadLetter]
    _sched: WorkSchedule | None
    _stamps: StampIndex

    if TYPE_CHECKING:  # the core's, and its other bases'

        def _counts(self) -> tuple[int, int, int]: ...

        def _delayed_count(self) -> int: ...

        def _moved(self, before: tuple[int, int, int], delayed_before: int) -> int: ...

        def pending_len(self) -> int: ...

        def stamp_of(self, item_id: int) -> int: ...

    def redrive(self, item_ids: Collection[int] | None = None) -> WorkTransition[int]:
        """Move dead letters (all, or those with the given item ids) to the pending tail.

        Redriven items keep their id and value and start over at ``attempts == 0``.
        """
        wanted = None if item_ids is None else set(item_ids)
        keep: list[DeadLetter] = []
        moved: list[PendingItem] = []
        for letter in self._dead:
            if wanted is None or letter.item_id in wanted:
                moved.append(PendingItem(letter.item_id, letter.value, 0))
            else:
                keep.append(letter)
        if not moved:
            return WorkTransition(0, 0)
        before = self._counts()
        self._dead = keep
        if self._sched is not None:
            for item in moved:
                self._sched.add_ready(item, self._pending)
        else:
            self._pending.extend(moved)
        return WorkTransition(len(moved), change_mask(before, self._counts()))

    def purge(self, *, dead_letters: bool = False) -> WorkTransition[int]:
        """Drop every pending item (or, with ``dead_letters``, every dead letter); leases
        in flight are kept. Returns how many were dropped."""
        before, delayed_before, sched = self._counts(), self._delayed_count(), self._sched
        if dead_letters:
            removed = len(self._dead)
            if sched is not None:
                for letter in self._dead:
                    sched.priorities.pop(letter.item_id, None)
            self._dead = []
        else:
            removed = len(self._pending) + (sched.clear() if sched is not None else 0)
            self._pending.clear()
        return WorkTransition(removed, self._moved(before, delayed_before))

    def discard_head(self) -> WorkTransition[PendingItem | None]:
        """Remove :meth:`head` without leasing it (it expired), or ``None``."""
        sched = self._sched
        item = sched.take() if sched is not None and sched.ready else None
        if item is None:
            if not self._pending:
                return WorkTransition(None, 0)
            item = self._pending.popleft()
        return WorkTransition(item, PENDING_LEN if self.pending_len() else
                              PENDING_LEN | IS_EMPTY)

    def run_at_head(self) -> tuple[int, int] | None:
        """``(first, end)`` ids of the never-delivered items next to be claimed that are
        still a run of retained values (:meth:`take_retained`), or ``None``."""
        pending = self._pending
        if not isinstance(pending, RetainedPending) or (self._sched and self._sched.ready):
            return None
        return pending.run_at_head()

    def discard_run(self, n: int) -> WorkTransition[int]:
        """Remove the first ``n`` items of :meth:`run_at_head` without leasing them (they
        expired): as ``n`` calls of :meth:`discard_head`. Returns how many left."""
        span = self.run_at_head()
        n = 0 if span is None else max(0, min(n, span[1] - span[0]))
        if not n:
            return WorkTransition(0, 0)
        assert isinstance(self._pending, RetainedPending)
        self._pending.drop_run_head(n)
        return WorkTransition(n, PENDING_LEN if self.pending_len() else PENDING_LEN | IS_EMPTY)

    def fresh_head(self) -> tuple[int, int, int] | None:
        """``(first, span, stamp)``: the never-delivered item next to be claimed from the
        plain pending items (not retained values nor ready scheduled ones), its stamp,
        and how many ids from it share that stamp, at most as many as are pending; or
        ``None``. The items of those ids need not all be pending in a row
        (:meth:`discard_fresh` stops where they are not)."""
        pending = self._pending
        if (not pending or isinstance(pending, RetainedPending)
                or (self._sched and self._sched.ready) or pending[0].attempts):
            return None
        first = pending[0].item_id
        end = self._stamps.run_end(first) if self._stamps else None
        span = len(pending) if end is None else min(len(pending), end - first)
        return first, span, self.stamp_of(first)

    def discard_fresh(self, n: int) -> WorkTransition[int]:
        """Remove up to ``n`` pending items from :meth:`fresh_head` without leasing them
        (they expired), stopping before one whose id does not follow or that was
        delivered before: as that many calls of :meth:`discard_head`. Returns how many
        left."""
        pending = self._pending
        first = pending[0].item_id if pending else 0
        k = 0
        for item in islice(pending, n):
            if item.item_id != first + k or item.attempts:
                break
            k += 1
        if not k:
            return WorkTransition(0, 0)
        for _ in range(k):
            pending.popleft()
        return WorkTransition(k, PENDING_LEN if self.pending_len() else PENDING_LEN | IS_EMPTY)
