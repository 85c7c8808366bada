"""Enqueue stamps of monotone ids (topic offsets, work item ids), as change points.

Ids are given out in increasing order and each is stamped when it is given
(milliseconds; 0: unknown). Consecutive ids share a stamp until it changes, so the index
keeps one point ``[first_id, stamp]`` per change: a publish or push of the plain path adds
nothing while the stamp is the same (one log entry's elements share the leader's stamp).
Points of ids nobody can ask for any more are forgotten (:meth:`StampIndex.forget_below`);
an id below every point reads as 0. The index counts the points stamped below the one
before them, so whether the stamps ascend (a bisection then finds a stamp) is known at
once; when they do not, a seek by time bisects their ascending runs
(:class:`~.stamp_runs.StampRuns`, made at the first such seek and kept after).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import chain, pairwise, repeat
from operator import gt, sub
from typing import Any

from .stamp_runs import StampRuns


class StampIndex:
    """``stamp_of(id)`` for ids noted in increasing order."""

    __slots__ = ("_falls", "_ids", "_runs", "_stamps")

    def __init__(self) -> None:
        self._ids: list[int] = []
        self._stamps: list[int] = []
        #: How many points are stamped below the point before them.
        self._falls = 0
        #: The ascending runs of the points, once a seek needed them while they fall.
        self._runs: StampRuns | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def note(self, first_id: int, stamp: int) -> None:
        """Ids from ``first_id`` on (at least every id noted before) have ``stamp``."""
        stamps = self._stamps
        if not stamps or stamps[-1] != stamp:
            if stamps and stamp < stamps[-1]:
                self._falls += 1
                if self._runs is not None:
                    self._runs.note_fall(first_id, stamps[-1])
            self._ids.append(first_id)
            stamps.append(stamp)

    def stamp_of(self, item_id: int) -> int:
        """The stamp of ``item_id``, or 0 when it is below every point kept."""
        i = bisect_right(self._ids, item_id)
        return self._stamps[i - 1] if i else 0

    def run_end(self, item_id: int) -> int | None:
        """The first id after ``item_id`` noted with another stamp (where the ids sharing
        ``item_id``'s stamp end), or ``None`` when there is none."""
        ids = self._ids
        i = bisect_right(ids, item_id)
        return ids[i] if i < len(ids) else None

    def forget_below(self, item_id: int) -> None:
        """Drop the points no id from ``item_id`` on needs."""
        i = bisect_right(self._ids, item_id) - 1
        if i > 0:
            if self._falls:
                self._falls -= _falls(self._stamps[:i + 1])
            del self._ids[:i]
            del self._stamps[:i]
            if self._runs is not None:
                if self._falls:
                    self._runs.forget_to(self._ids[0])
                else:
                    self._runs = None

    def first_at_or_after(self, stamp: int, base: int, end: int) -> int:
        """The first id of ``base..end - 1`` whose stamp is ``>= stamp`` (ids in order,
        whatever their stamps), or ``end`` when there is none."""
        if stamp <= 0:  # every element, unknown stamps (0) included
            return min(base, end)
        return self.first_above_in(stamp - 1, base, end, not self._falls)

    def between(self, first: int, end: int) -> StampIndex:
        """The index :meth:`note` of ``stamp_of(i)`` for each ``i`` of ``first..end - 1``
        in turn makes from empty, built from slices of the points."""
        index = StampIndex()
        if first >= end:
            return index
        ids, stamps = self._ids, self._stamps
        lo, hi = bisect_right(ids, first), bisect_left(ids, end)
        head = stamps[lo - 1] if lo else 0
        index._ids = [first, *ids[lo:hi]]
        index._stamps = [head, *stamps[lo:hi]]
        if len(index._ids) > 1 and index._stamps[1] == head:  # 0 then noted 0
            del index._ids[1], index._stamps[1]
        index._falls = _falls(index._stamps)
        return index

    def each(self, first: int, end: int) -> Iterator[int]:
        """The stamp of each id of ``first..end - 1`` in turn (a repeat per point)."""
        index = self.between(first, end)
        bounds = [*index._ids[1:], end]
        return chain.from_iterable(map(repeat, index._stamps, map(sub, bounds, index._ids)))

    def ascending(self) -> bool:
        """Whether the stamps never go down as the ids go up (no work per point)."""
        return not self._falls

    def first_above_in(self, stamp: int, first: int, end: int, ascending: bool = False) -> int:
        """The first id of ``first..end - 1`` stamped above ``stamp``, or ``end`` when
        there is none, whatever the order of the stamps: a bisection to ``first``'s point,
        then a bisection of the stamps when they ascend (``ascending``: the caller knows
        they are :meth:`ascending`), else of their ascending runs. An id below every
        point reads as 0, whatever the points' stamps."""
        if first >= end:
            return end
        ids, stamps = self._ids, self._stamps
        i = bisect_right(ids, first) - 1
        if (stamps[i] if i >= 0 else 0) > stamp:  # 0: below every point
            return first
        n = len(ids)
        if ascending or not self._falls:
            i = bisect_right(stamps, stamp, max(i, 0))
        else:
            runs = self._runs
            if runs is None:
                runs = self._runs = StampRuns(ids, stamps)
            i = runs.first_above(ids, stamps, i + 1, stamp)
        return min(ids[i], end) if i < n else end

    def points(self) -> list[list[int]]:
        """``[[first_id, stamp], ...]`` (the snapshot form)."""
        return [[i, s] for i, s in zip(self._ids, self._stamps, strict=True)]

    def shared_tail(self, other: StampIndex) -> int | None:
        """The first id of this index's points from which (its first one, else its
        second) they are ``other``'s last points, or ``None``."""
        ids, stamps = self._ids, self._stamps
        for k in (0, 1):
            n = len(ids) - k
            if 0 < n <= len(other._ids) and other._ids[-n:] == ids[k:] and (
                    other._stamps[-n:] == stamps[k:]):
                return ids[k]
        return None

    def below(self, first_id: int) -> StampIndex:
        """The points of the ids below ``first_id``."""
        k = bisect_left(self._ids, first_id)
        index = StampIndex()
        index._ids, index._stamps = self._ids[:k], self._stamps[:k]
        index._falls = _falls(index._stamps) if self._falls else 0
        return index

    def then(self, other: StampIndex, first_id: int) -> StampIndex:
        """This index's points below ``first_id``, then ``other``'s from its point at
        ``first_id`` on (``ValueError`` when it has none there)."""
        i = bisect_left(other._ids, first_id)
        if i == len(other._ids) or other._ids[i] != first_id:
            raise ValueError(f"stamps: the shared points start at id {first_id}, which is "
                             "no point of the stamps they are shared with")
        index = self.below(first_id)
        index._ids += other._ids[i:]
        index._stamps += other._stamps[i:]
        index._falls = _falls(index._stamps)
        return index

    def columns(self) -> list[list[int]]:
        """``[first_ids, stamps]``: :meth:`points` as two lists, made without a list per
        point (a snapshot form)."""
        return [list(self._ids), list(self._stamps)]

    @classmethod
    def from_columns(cls, doc: Any) -> StampIndex:
        """:meth:`columns` back; ``ValueError`` naming what is wrong."""
        if (type(doc) is not list or len(doc) != 2 or not all(
                type(c) is list and all(type(x) is int for x in c) for c in doc)
                or len(doc[0]) != len(doc[1])):
            raise ValueError("stamps must be [first_ids, stamps], two lists of ints alike long")
        ids = doc[0]
        if any(a >= b for a, b in pairwise(ids)):
            raise ValueError("stamps: the first ids of their points must ascend")
        index = cls()
        index._ids, index._stamps = list(ids), list(doc[1])
        index._falls = _falls(index._stamps)
        return index

    @classmethod
    def from_points(cls, doc: Any) -> StampIndex:
        """:meth:`points` back; ``ValueError`` naming what is wrong."""
        index = cls()
        if doc is None:
            return index
        if type(doc) is not list:
            raise ValueError("stamps must be a list of [first_id, stamp], "
                             f"not {type(doc).__name__}")
        last = -1
        for point in doc:
            if (type(point) is not list or len(point) != 2
                    or not all(type(x) is int for x in point) or point[0] <= last):
                raise ValueError(f"stamps: {str(point)[:40]} is not a point [first_id, stamp] "
                                 "of ints above the one before")
            last = point[0]
            index._ids.append(point[0])
            index._stamps.append(point[1])
        index._falls = _falls(index._stamps)
        return index


def _falls(stamps: list[int]) -> int:
    """How many of ``stamps`` are below the one before them."""
    return sum(map(gt, stamps, stamps[1:]))
