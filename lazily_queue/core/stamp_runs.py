"""The ascending runs of stamp points that do not all ascend, for seeks by time.

A :class:`~.stamps.StampIndex` whose stamps go down somewhere (a local wall clock stepped
back) is cut at each point stamped below the one before it (a *fall*) into runs whose
stamps never go down. The first point after a given one stamped above a time is then a
bisection in the run it is in, else in the first later run whose last (highest) stamp is
above that time, found in a max-tree of the runs' last stamps: a few bisections and
``O(log runs)`` steps, not a walk over the points in between.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

_BELOW_ALL = float("-inf")


class MaxTree:
    """Values appended in turn; the first position from a given one holding a value
    above a bound, in ``O(log n)``."""

    __slots__ = ("_n", "_size", "_tree")

    def __init__(self, values: list[int] | list[float]) -> None:
        self._build(values)

    def _build(self, values: list[int] | list[float]) -> None:
        size = 1
        while size < len(values):
            size *= 2
        self._n, self._size = len(values), size
        tree: list[float] = [_BELOW_ALL] * size
        level: list[float] = [*values, *[_BELOW_ALL] * (size - len(values))]
        tree += level
        while len(level) > 1:
            level = list(map(max, level[0::2], level[1::2]))
            tree[len(level):2 * len(level)] = level
        self._tree = tree

    def __len__(self) -> int:
        return self._n

    def values_from(self, first: int) -> list[float]:
        """The values from position ``first`` on."""
        return self._tree[self._size + first:self._size + self._n]

    def append(self, value: int) -> None:
        """Add ``value`` at position ``len(self)``."""
        if self._n == self._size:
            self._build([*self._tree[self._size:], value])
            return
        tree, k = self._tree, self._size + self._n
        self._n += 1
        tree[k] = value
        k >>= 1
        while k and tree[k] < value:
            tree[k] = value
            k >>= 1

    def first_above(self, first: int, bound: int) -> int:
        """The first position from ``first`` on holding a value above ``bound``, or
        ``len(self)`` when there is none."""
        if first >= self._n:
            return self._n
        tree, size = self._tree, self._size
        k = size + first
        while tree[k] <= bound:
            while k & 1:  # a right child: on to its parent's right sibling
                k >>= 1
            if not k:
                return self._n
            k += 1
        while k < size:
            k *= 2
            if tree[k] <= bound:
                k += 1
        return k - size


class StampRuns:
    """The falls of a list of stamp points (their first ids) and the last stamp of the
    run each ends, kept through appends and trims of the points."""

    __slots__ = ("_fall_ids", "_lo", "_tops")

    def __init__(self, ids: list[int], stamps: list[int]) -> None:
        falls = [k for k in range(1, len(stamps)) if stamps[k] < stamps[k - 1]]
        #: The first id of each point stamped below the one before it, in order.
        self._fall_ids = [ids[k] for k in falls]
        #: The stamp of the point before each fall (the highest of the run it ends).
        self._tops = MaxTree([stamps[k - 1] for k in falls])
        #: How many of the first falls are of points no longer kept.
        self._lo = 0

    def note_fall(self, first_id: int, top: int) -> None:
        """A point ``first_id`` is stamped below ``top``, the stamp of the last one."""
        self._fall_ids.append(first_id)
        self._tops.append(top)

    def forget_to(self, first_id: int) -> None:
        """The points are kept from the one of ``first_id`` on (a fall there is none)."""
        fall_ids = self._fall_ids
        self._lo = lo = bisect_right(fall_ids, first_id, self._lo)
        if lo > 64 and 2 * lo > len(fall_ids):
            self._tops = MaxTree(self._tops.values_from(lo))
            del fall_ids[:lo]
            self._lo = 0

    def first_above(self, ids: list[int], stamps: list[int], j: int, stamp: int) -> int:
        """The index of the first of the points ``ids``/``stamps`` from index ``j`` on
        stamped above ``stamp``, or ``len(ids)`` when there is none."""
        n = len(ids)
        if j >= n:
            return n
        fall_ids, lo = self._fall_ids, self._lo
        g = bisect_right(fall_ids, ids[j], lo)  # j's run ends before fall g
        hi = bisect_left(ids, fall_ids[g]) if g < len(fall_ids) else n
        k = bisect_right(stamps, stamp, j, hi)
        if k < hi or hi == n:
            return k
        g = self._tops.first_above(g + 1, stamp)
        if g < len(fall_ids):
            hi = bisect_left(ids, fall_ids[g])
        elif stamps[-1] > stamp:
            hi = n
        else:
            return n
        return bisect_right(stamps, stamp, bisect_left(ids, fall_ids[g - 1]), hi)
