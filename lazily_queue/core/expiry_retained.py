"""The deadlines a new consumer group takes from its topic for the retained elements it
starts with, looked up when asked instead of listed one by one.

A group declared at its topic's head holds item ids ``first..end - 1`` (the elements'
offsets); each has the deadline it had on its topic at the declaration
(:func:`~.topic_expiry.deadline`: the earlier of its own per-message deadline and its
publish stamp plus the topic's age limit). :class:`RetainedDeadlines` keeps what decides
them (slices of the topic's stamp points and per-message deadlines, and the age limit),
fixed at the declaration, and the ids whose deadline has left (the item was claimed or
discarded): ``get`` then answers as the dict of every deadline would.
"""

from __future__ import annotations

import copy
from bisect import bisect_left
from collections.abc import Mapping
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .stamps import StampIndex

if TYPE_CHECKING:
    from .expiry import Expiry
    from .topic import TopicCore


class RetainedDeadlines:
    """The deadlines of ids ``first..end - 1`` still held (module docstring)."""

    __slots__ = ("_age", "_ascending", "_end", "_gone", "_low", "_own_deadlines", "_own_ids",
                 "_stamps")

    def __init__(self, first: int, end: int, age: int | None, stamps: StampIndex,
                 own_ids: list[int], own_deadlines: list[int]) -> None:
        """``stamps``: the elements' stamps; ``own_ids`` (ascending) and
        ``own_deadlines``: their per-message deadlines; ``age``: the age limit (ms)."""
        self._low, self._end, self._age = first, end, age
        self._stamps = stamps
        #: Whether the stamps never go down (the ids past the age limit are a prefix).
        self._ascending = stamps.ascending()
        self._own_ids, self._own_deadlines = own_ids, own_deadlines
        #: Ids from ``_low`` on whose deadline left out of order.
        self._gone: set[int] = set()

    @classmethod
    def of(cls, topic: TopicCore[Any], rules: Expiry, first: int, end: int
           ) -> RetainedDeadlines | None:
        """The deadlines of ``topic``'s offsets ``first..end - 1`` under its expiry
        ``rules``; ``None`` when none of them has one."""
        limits = [v for v in (rules.default_ms, rules.max_age_ms) if v is not None]
        own = rules.deadlines
        keys = list(own)
        ids = sorted(keys)
        values = list(own.values()) if ids == keys else [own[k] for k in ids]
        lo, hi = bisect_left(ids, first), bisect_left(ids, end)
        if not limits and lo == hi:
            return None
        return cls(first, end, min(limits) if limits else None,
                   topic.stamps_between(first, end), ids[lo:hi], values[lo:hi])

    def __bool__(self) -> bool:
        return self._low < self._end

    def __repr__(self) -> str:
        return f"RetainedDeadlines({self._low}..{self._end - 1}, gone={len(self._gone)})"

    def get(self, element_id: int) -> int | None:
        """The deadline of ``element_id`` while it is held here, else ``None``."""
        if not self._low <= element_id < self._end or element_id in self._gone:
            return None
        return self._compute(element_id)

    def _compute(self, element_id: int) -> int | None:
        own = self.get_own(element_id) if self._own_ids else None
        if self._age is None:
            return own
        by_age = self._stamps.stamp_of(element_id) + self._age
        return by_age if own is None else min(own, by_age)

    def pop(self, element_id: int) -> int | None:
        """:meth:`get`, and the deadline leaves."""
        found = self.get(element_id)
        if self._low <= element_id < self._end:
            gone = self._gone
            gone.add(element_id)
            while self._low in gone:
                gone.remove(self._low)
                self._low += 1
        return found

    def forget_below(self, element_id: int) -> None:
        """Every deadline of an id below ``element_id`` leaves."""
        if element_id > self._low:
            self._low = min(element_id, self._end)
            self._gone = {i for i in self._gone if i >= self._low}

    def expired_run(self, first: int, end: int, now: int) -> int:
        """How many ids from ``first`` (the lowest held) to ``end`` have expired at ``now``
        in a row (each as :meth:`get` tells): by turns those past the age limit (found by
        bisection when the stamps ascend, else by a walk over the stamps' points, each
        point walked one whose ids all expired) and those past their own deadline. 0
        when ``first`` is not the lowest held."""
        if first != self._low or self._gone or first >= (end := min(end, self._end)):
            return 0
        at = first
        age, stamps = self._age, self._stamps
        own_ids, own = self._own_ids, self._own_deadlines
        while at < end:
            start = at
            if age is not None:
                at = (max(at, min(end, stamps.first_above(now - age))) if self._ascending
                      else stamps.first_above_in(now - age, at, end))
            j = bisect_left(own_ids, at)
            while at < end and j < len(own_ids) and own_ids[j] == at and own[j] <= now:
                at += 1
                j += 1
            if at == start or self._ascending or age is None:
                break  # stamps ascending (or no age limit): what follows is live by age
        return at - first

    def copy(self) -> RetainedDeadlines:
        """A copy that later changes of this one leave as it is (sharing the lists that
        never change)."""
        twin = copy.copy(self)
        twin._gone = set(self._gone)
        return twin

    def to_list(self) -> list[Any]:
        """``[low, end, age, gone, own_ids, own_deadlines, stamps, ascending]`` (the
        snapshot form): the ids held (``low..end - 1`` but the ``gone`` ones), the age
        limit, the per-message deadlines of the ids from ``low`` on, the stamps of those
        ids (:meth:`~.stamps.StampIndex.columns`) and whether the stamps ascended at the
        declaration (a reader takes it from the stamps themselves). Slices of its lists:
        no work (nor list) per id."""
        lo = bisect_left(self._own_ids, self._low)
        return [self._low, self._end, self._age, sorted(self._gone), self._own_ids[lo:],
                self._own_deadlines[lo:], self._stamps.between(self._low, self._end).columns(),
                self._ascending]

    @classmethod
    def from_list(cls, doc: Any) -> RetainedDeadlines:
        """:meth:`to_list` back; ``ValueError`` naming what is wrong."""
        if type(doc) is not list or len(doc) != 8:
            raise ValueError("retained deadlines are [low, end, age, gone, own_ids, "
                             f"own_deadlines, stamps, ascending], not {str(doc)[:60]}")
        low, end, age, gone, own_ids, own, points, ascending = doc
        if type(low) is not int or type(end) is not int or not 0 <= low < end:
            raise ValueError(f"retained deadlines hold ids low..end - 1 (ints, 0 <= low < end), "
                             f"not {str(low)[:20]}..{str(end)[:20]}")
        if age is not None and (type(age) is not int or age <= 0):
            raise ValueError(f"a retained age limit is an int > 0 or None, not {str(age)[:20]}")
        ids = _ints(gone, "gone ids") + _ints(own_ids, "own ids")
        if any(not low <= i < end for i in ids) or own_ids != sorted(set(own_ids)):
            raise ValueError(f"retained ids must be in {low}..{end - 1}, own ids ascending")
        if len(_ints(own, "own deadlines")) != len(own_ids) or type(ascending) is not bool:
            raise ValueError("retained deadlines need a deadline per own id and a bool")
        out = cls(low, end, age, StampIndex.from_columns(points), list(own_ids), list(own))
        out._gone = set(gone)  # ``ascending`` is read from the stamps, not trusted
        return out

    def count(self) -> int:
        """How many ids held have a deadline (the length of :meth:`pairs`)."""
        if self._age is not None:
            return self._end - self._low - len(self._gone)
        own_ids = self._own_ids
        held = len(own_ids) - bisect_left(own_ids, self._low)
        return held - sum(1 for i in self._gone if self.get_own(i) is not None)

    def get_own(self, element_id: int) -> int | None:
        """The per-message deadline of ``element_id``, held or not, or ``None``."""
        own_ids = self._own_ids
        i = bisect_left(own_ids, element_id)
        return self._own_deadlines[i] if i < len(own_ids) and own_ids[i] == element_id else None

    def pairs(self) -> list[list[int]]:
        """``[id, deadline]`` of every id still held that has one, ascending (the
        snapshot form), made a run of ids of one stamp at a time."""
        low, end, age, gone = self._low, self._end, self._age, self._gone
        own_ids, own = self._own_ids, self._own_deadlines
        lo = bisect_left(own_ids, low)
        if age is None:
            return [[i, d] for i, d in zip(own_ids[lo:], own[lo:], strict=True)
                    if i not in gone]
        out: list[list[int]] = []
        points = self._stamps.points()
        for n, (first, stamp) in enumerate(points):
            a = max(first, low)
            b = min(points[n + 1][0] if n + 1 < len(points) else end, end)
            if a < b:
                out.extend(map(list, zip(range(a, b), repeat(stamp + age))))
        for i, d in zip(own_ids[lo:], own[lo:], strict=True):
            pair = out[i - low]
            pair[1] = min(pair[1], d)
        return [p for p in out if p[0] not in gone] if gone else out


def merged_pairs(retained: RetainedDeadlines, own: Mapping[int, int]) -> list[list[int]]:
    """``[[id, deadline], ...]`` ascending, of ``retained`` and the deadlines ``own``
    (by id, none of ``retained``'s)."""
    pairs = [[k, v] for k, v in sorted(own.items())]
    held = retained.pairs()
    if pairs and held and pairs[0][0] < held[-1][0]:
        return sorted([*held, *pairs], key=itemgetter(0))
    return held + pairs


def _ints(doc: Any, what: str) -> list[int]:
    if type(doc) is not list or not all(type(i) is int for i in doc):
        raise ValueError(f"retained deadlines: {what} must be a list of ints")
    return doc
