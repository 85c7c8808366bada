"""The deadlines a new consumer group takes from its topic for the retained elements it
starts with, looked up when asked instead of listed one by one.

A group declared at its topic's head holds item ids ``first..end - 1`` (the elements'
offsets); each has the deadline it had on its topic at the declaration
(:func:`~.topic_expiry.deadline`: the earlier of its own per-message deadline and its
publish stamp plus the topic's age limit). An element's deadline is its stamp plus its
*lifetime*: the smaller of the age limit and its own ttl (its own deadline less its
stamp), ``None`` when it has neither. :class:`RetainedDeadlines` keeps what decides
them, fixed at the declaration: the age limit, the own ttls as runs of consecutive ids
sharing one (``(first id, length, ttl)``: one run for the elements of a producer that
gives every message the same ttl), a slice of the topic's stamp points, and the ids
whose deadline has left (the item was claimed or discarded): ``get`` then answers as the
dict of every deadline would. Neither the group nor its snapshot holds anything per
element but a run per change of own ttl.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from itertools import count, groupby, repeat
from operator import itemgetter, sub
from typing import TYPE_CHECKING, Any

from .stamps import StampIndex

if TYPE_CHECKING:
    from .expiry import Expiry
    from .topic import TopicCore


class RetainedDeadlines:
    """The deadlines of ids ``first..end - 1`` still held (module docstring)."""

    __slots__ = ("_age", "_ascending", "_end", "_gone", "_low", "_own_lens", "_own_starts",
                 "_own_ttls", "_stamps")

    def __init__(self, first: int, end: int, age: int | None, stamps: StampIndex,
                 own: tuple[list[int], list[int], list[int]]) -> None:
        """``stamps``: the elements' stamps; ``age``: the age limit (ms); ``own``: the
        runs of ids with a ttl of their own, ``(starts, lengths, ttls)``, ascending and
        apart."""
        self._low, self._end, self._age = first, end, age
        self._stamps = stamps
        #: Whether the stamps never go down (a bisection finds where the expired end).
        self._ascending = stamps.ascending()
        self._own_starts, self._own_lens, self._own_ttls = own
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
        stamps = topic.stamps_between(first, end)
        return cls(first, end, min(limits) if limits else None, stamps,
                   _own_runs(ids[lo:hi], values[lo:hi], stamps))

    def __bool__(self) -> bool:
        return self._low < self._end

    def __repr__(self) -> str:
        return (f"RetainedDeadlines({self._low}..{self._end - 1}, "
                f"own runs={len(self._own_starts)}, gone={len(self._gone)})")

    def get(self, element_id: int) -> int | None:
        """The deadline of ``element_id`` while it is held here, else ``None``."""
        if not self._low <= element_id < self._end or element_id in self._gone:
            return None
        return self._compute(element_id)

    def _compute(self, element_id: int) -> int | None:
        life = self._life(bisect_right(self._own_starts, element_id) - 1, element_id)
        return None if life is None else self._stamps.stamp_of(element_id) + life

    def _life(self, k: int, element_id: int) -> int | None:
        """The lifetime of ``element_id``, ``k`` the last own run starting at or below it."""
        age = self._age
        if k >= 0 and element_id < self._own_starts[k] + self._own_lens[k]:
            ttl = self._own_ttls[k]
            return ttl if age is None or ttl < age else age
        return age

    def _segments(self, first: int, end: int) -> Iterator[tuple[int, int, int | None]]:
        """``(a, b, lifetime)`` of the runs of ids of one lifetime from ``first`` to
        ``end``, in order."""
        starts, lens = self._own_starts, self._own_lens
        n = len(starts)
        k = bisect_right(starts, first) - 1
        at = first
        while at < end:
            if k >= 0 and at < (stop := starts[k] + lens[k]):
                yield at, min(stop, end), self._life(k, at)
                at = stop
            else:
                stop = starts[k + 1] if k + 1 < n else end
                yield at, min(stop, end), self._age
                at = stop
            if k + 1 < n and starts[k + 1] <= at:
                k += 1

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
        in a row (each as :meth:`get` tells), whatever the order of the stamps: a run of
        one lifetime at a time, up to the first id stamped after ``now`` less that
        lifetime (by a bisection of the stamps when they ascend, else of their ascending
        runs). 0 when ``first`` is not
        the lowest held."""
        if first != self._low or self._gone or first >= (end := min(end, self._end)):
            return 0
        at, stamps, ascending = first, self._stamps, self._ascending
        for a, b, life in self._segments(first, end):
            if life is None:
                break
            at = stamps.first_above_in(now - life, a, b, ascending)
            if at < b:
                break
        return at - first

    def copy(self) -> RetainedDeadlines:
        """A copy that later changes of this one leave as it is (sharing the lists that
        never change)."""
        twin = copy.copy(self)
        twin._gone = set(self._gone)
        return twin

    def to_list(self) -> list[Any]:
        """``[low, end, age, gone, [starts, lengths, ttls], stamps]`` (the snapshot
        form): the ids held (``low..end - 1`` but the ``gone`` ones), the age limit,
        the runs of those ids with a ttl of their own and the ids' stamps
        (:meth:`~.stamps.StampIndex.columns`). Slices of its lists: no work (nor list)
        per id."""
        low, end = self._low, self._end
        starts, lens = self._own_starts, self._own_lens
        lo, hi = max(0, bisect_right(starts, low) - 1), len(starts)
        if lo < hi and starts[lo] + lens[lo] <= low:
            lo += 1
        runs = [starts[lo:hi], lens[lo:hi], self._own_ttls[lo:hi]]
        if runs[0] and runs[0][0] < low:  # the run holding ``low`` starts there
            runs[1][0] -= low - runs[0][0]
            runs[0][0] = low
        return [low, end, self._age, sorted(self._gone), runs,
                self._stamps.between(low, end).columns()]

    @classmethod
    def from_list(cls, doc: Any) -> RetainedDeadlines:
        """:meth:`to_list` back, or the form listing the own deadlines one by one
        (``[low, end, age, gone, own_ids, own_deadlines, stamps, ascending]``);
        ``ValueError`` naming what is wrong."""
        if type(doc) is list and len(doc) == 8:
            return cls._from_listed(doc)
        if type(doc) is not list or len(doc) != 6:
            raise ValueError("retained deadlines are [low, end, age, gone, own runs, "
                             f"stamps], not {str(doc)[:60]}")
        low, end, age, gone, runs, points = doc
        _check(low, end, age, _ints(gone, "gone ids"))
        if (type(runs) is not list or len(runs) != 3
                or not len(_ints(runs[0], "run starts")) == len(_ints(runs[1], "run lengths"))
                == len(_ints(runs[2], "run ttls"))):
            raise ValueError("retained own runs are [starts, lengths, ttls], three lists "
                             "alike long")
        starts, lens = runs[0], runs[1]
        if any(n <= 0 for n in lens) or any(
                a + n > b for a, n, b in zip(starts, lens, starts[1:], strict=False)) or (
                starts and (starts[0] < low or starts[-1] + lens[-1] > end)):
            raise ValueError(f"retained own runs must be apart, ascending, in {low}..{end - 1}")
        out = cls(low, end, age, StampIndex.from_columns(points),
                  (list(starts), list(lens), list(runs[2])))
        out._gone = set(gone)
        return out

    @classmethod
    def _from_listed(cls, doc: list[Any]) -> RetainedDeadlines:
        low, end, age, gone, own_ids, own, points, ascending = doc
        _check(low, end, age, _ints(gone, "gone ids") + _ints(own_ids, "own ids"))
        if own_ids != sorted(set(own_ids)):
            raise ValueError(f"retained ids must be in {low}..{end - 1}, own ids ascending")
        if len(_ints(own, "own deadlines")) != len(own_ids) or type(ascending) is not bool:
            raise ValueError("retained deadlines need a deadline per own id and a bool")
        stamps = StampIndex.from_columns(points)
        out = cls(low, end, age, stamps, _own_runs(own_ids, own, stamps))
        out._gone = set(gone)
        return out

    def check_below(self, next_id: int) -> None:
        """``ValueError`` when an id held is not below ``next_id``, the next id the consumer
        group holding them gives: each held id is one it gave (a record claiming more
        would make every listing of its deadlines that long)."""
        if self._end > next_id:
            raise ValueError(
                f"retained deadlines hold ids {self._low}..{self._end - 1} but their group "
                f"gave ids below {next_id} only; each held id is one of its items")

    def check_held_by(self, items: int) -> None:
        """``ValueError`` when more ids are held than ``items``, how many items the
        consumer group holding them holds: each held id is one of them (a record and a
        next id both claiming more would make every listing of its deadlines that long
        whatever the group holds)."""
        held = self._end - self._low - len(self._gone)
        if held > items:
            raise ValueError(
                f"retained deadlines hold {held} ids ({self._low}..{self._end - 1}) but "
                f"their group holds {items} items only; each held id is one of its items")

    def count(self) -> int:
        """How many ids held have a deadline (the length of :meth:`pairs`)."""
        held = sum(b - a for a, b, life in self._segments(self._low, self._end)
                   if life is not None)
        return held - sum(1 for i in self._gone if self._compute(i) is not None)

    def pairs(self) -> list[list[int]]:
        """``[id, deadline]`` of every id still held that has one, ascending (the
        snapshot form), made a run of ids of one stamp and lifetime at a time."""
        out: list[list[int]] = []
        for a, b, life in self._segments(self._low, self._end):
            if life is None:
                continue
            points = self._stamps.between(a, b).points()
            for n, (first, stamp) in enumerate(points):
                last = points[n + 1][0] if n + 1 < len(points) else b
                out.extend(map(list, zip(range(first, last), repeat(stamp + life))))
        gone = self._gone
        return [p for p in out if p[0] not in gone] if gone else out


def _own_runs(own_ids: list[int], own_deadlines: list[int], stamps: StampIndex
              ) -> tuple[list[int], list[int], list[int]]:
    """``(starts, lengths, ttls)``: the runs of consecutive ``own_ids`` (ascending) whose
    deadlines less their stamps are one ttl. A step per run of consecutive ids and per
    change of ttl, the rest in C; one object per distinct ttl."""
    starts: list[int] = []
    lens: list[int] = []
    ttls: list[int] = []
    shared: dict[int, int] = {}
    if not own_ids:
        runs = []
    elif own_ids[-1] - own_ids[0] == len(own_ids) - 1:  # the ids ascend: one run of them
        runs = [len(own_ids)]
    else:
        runs = [len(list(run)) for _, run in groupby(map(sub, own_ids, count()))]
    j = 0
    for n in runs:
        a = own_ids[j]
        ttl = (own_deadlines[j] - stamps.stamp_of(a) if n == 1 else
               _one_ttl(own_deadlines, j, a, a + n, stamps))
        if ttl is not None:  # one for them all
            starts.append(a)
            lens.append(n)
            ttls.append(shared.setdefault(ttl, ttl))
        else:
            for ttl, same in groupby(map(sub, own_deadlines[j:j + n], stamps.each(a, a + n))):
                k = len(list(same))
                starts.append(a)
                lens.append(k)
                ttls.append(shared.setdefault(ttl, ttl))
                a += k
        j += n
    return starts, lens, ttls


def _one_ttl(deadlines: list[int], j: int, first: int, end: int, stamps: StampIndex
             ) -> int | None:
    """The ttl every id of ``first..end - 1`` has, its deadline ``deadlines[j + id -
    first]`` less its stamp, or ``None`` when they differ: one count of a slice per
    stamp point."""
    ids, values = stamps.between(first, end).columns()
    ttl = deadlines[j] - values[0]
    bounds = [*ids[1:], end]
    for a, b, stamp in zip(ids, bounds, values, strict=True):
        lo = j + a - first
        if deadlines[lo:lo + b - a].count(stamp + ttl) != b - a:
            return None
    return ttl


def merged_pairs(retained: RetainedDeadlines, own: Mapping[int, int]) -> list[list[int]]:
    """``[[id, deadline], ...]`` ascending, of ``retained`` and the deadlines ``own``
    (by id, none of ``retained``'s)."""
    pairs = [[k, v] for k, v in sorted(own.items())]
    held = retained.pairs()
    if pairs and held and pairs[0][0] < held[-1][0]:
        return sorted([*held, *pairs], key=itemgetter(0))
    return held + pairs


def _check(low: Any, end: Any, age: Any, ids: list[int]) -> None:
    if type(low) is not int or type(end) is not int or not 0 <= low < end:
        raise ValueError(f"retained deadlines hold ids low..end - 1 (ints, 0 <= low < end), "
                         f"not {str(low)[:20]}..{str(end)[:20]}")
    if age is not None and (type(age) is not int or age <= 0):
        raise ValueError(f"a retained age limit is an int > 0 or None, not {str(age)[:20]}")
    if any(not low <= i < end for i in ids):
        raise ValueError(f"retained ids must be in {low}..{end - 1}")


def _ints(doc: Any, what: str) -> list[int]:
    if type(doc) is not list or not all(type(i) is int for i in doc):
        raise ValueError(f"retained deadlines: {what} must be a list of ints")
    return doc
