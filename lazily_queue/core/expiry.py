"""Message expiry: per-message TTL, a per-cell default TTL and topic retention by age.

Time is milliseconds on the leader's clock for a replicated cell (the stamp of the entry
being applied), on the cell's clock for a local one: nothing here reads a clock.

An element pushed at stamp ``s`` with TTL ``t`` has the deadline ``s + t`` and is
*expired* from the first time ``now >= s + t``. Its TTL is the one given to its push,
else the cell's default (``None``: it never expires). Per-message deadlines are kept by
element id in :class:`Expiry`; the default needs nothing per element (the deadline
follows from the enqueue stamp the cell keeps anyway), so a cell with only a default
pays one comparison per take.

Expiry is decided when elements are *taken* (a pop, a claim) or *swept* (a periodic
entry): the expired elements at the head leave, are counted in :attr:`Expiry.expired`
and are never handed out. An element behind a live head with a longer TTL waits until
it reaches the head, then leaves without being delivered (as RabbitMQ's per-message
TTL): until then it counts in the cell's length. With the default TTL only, deadlines
follow FIFO order and every expired element leaves at the next take or sweep.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import OrderedDict
from itertools import islice, repeat
from operator import lt, ne, or_
from typing import Any, Final

from ..errors import InvalidTtl, shown
from .expiry_retained import RetainedDeadlines, merged_pairs
from .numbers import is_finite

#: Per-message deadlines of taken elements kept, the newest, so that an element given
#: back to the head (its receiver went away) keeps its deadline.
TAKEN_KEPT: Final = 1024
#: The largest TTL or age accepted (about 68 years), in milliseconds.
MAX_TTL_MS: Final = 2**41


def whole_ms(seconds: float) -> int:
    """``seconds`` in whole milliseconds, rounded up (never early) once the float noise
    of the product is gone: 0.009 s is 9 ms, not 10."""
    return math.ceil(round(seconds * 1000, 6))


def ttl_ms(ttl: object, what: str = "ttl") -> int:
    """``ttl`` (seconds: a positive finite int or float) in whole milliseconds (at
    least 1); :class:`~lazily_queue.errors.InvalidTtl` naming ``what`` otherwise."""
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise InvalidTtl(f"{what} must be a number of seconds > 0, got "
                         f"{type(ttl).__name__} {shown(ttl)}")
    if not is_finite(ttl) or ttl <= 0:
        raise InvalidTtl(f"{what} must be a finite number of seconds > 0, got {shown(ttl)}")
    if ttl > MAX_TTL_MS / 1000 or (ms := max(1, whole_ms(ttl))) > MAX_TTL_MS:
        raise InvalidTtl(f"{what} must be at most {MAX_TTL_MS // 1000} seconds, got {shown(ttl)}")
    return ms


def optional_ttl_ms(ttl: object, what: str = "ttl") -> int | None:
    """:func:`ttl_ms`, with ``None`` meaning none."""
    return None if ttl is None else ttl_ms(ttl, what)


def checked_ms(value: object, what: str) -> int | None:
    """A TTL or age already in milliseconds (from a log entry, a snapshot, a client):
    ``None`` or an int in ``1..MAX_TTL_MS``; ``ValueError`` naming ``what`` otherwise."""
    if value is None:
        return None
    if type(value) is not int or not 0 < value <= MAX_TTL_MS:
        raise ValueError(f"{what} must be an int of milliseconds in 1..{MAX_TTL_MS} "
                         f"or None, not {str(value)[:40]}")
    return value


class Expiry:
    """The expiry rules and per-message deadlines of one cell, and its expired count.

    ``default_ms``: the TTL of an element pushed without one (``None``: never).
    ``max_age_ms``: a topic's retention by age (``None``: none).
    """

    __slots__ = ("_ascending", "deadlines", "default_ms", "expired", "max_age_ms", "retained",
                 "skipped", "taken")

    def __init__(self, default_ms: int | None = None, max_age_ms: int | None = None) -> None:
        self.default_ms = default_ms
        self.max_age_ms = max_age_ms
        #: Per-message deadlines (ms) by element id, written by :meth:`note` and
        #: :meth:`give_back` (a write of an id below one held that bypasses them makes
        #: :meth:`forget_below` miss it).
        self.deadlines: dict[int, int] = {}
        #: Whether the ids of :attr:`deadlines` ascend in its order (a topic's offsets
        #: do): :meth:`forget_below` then drops its first ones, not looking at the rest.
        self._ascending = True
        #: A consumer group's: the deadlines of the retained elements it started with,
        #: looked up when asked (they are part of :meth:`held_deadlines`, not of
        #: :attr:`deadlines`).
        self.retained: RetainedDeadlines | None = None
        #: Deadlines of the last :data:`TAKEN_KEPT` elements taken, by id.
        self.taken: OrderedDict[int, int] = OrderedDict()
        #: Elements that expired (left without being delivered).
        self.expired = 0
        #: A topic's: unread elements its subscribers lost to the age limit (the gaps).
        self.skipped = 0

    def __repr__(self) -> str:
        return (f"Expiry(default_ms={self.default_ms}, max_age_ms={self.max_age_ms}, "
                f"deadlines={len(self.deadlines)}, retained={self.retained!r}, "
                f"expired={self.expired})")

    def note(self, element_id: int, stamp: int, ttl: int | None) -> None:
        """Element ``element_id``, stamped ``stamp``, was pushed with TTL ``ttl`` (ms;
        ``None``: the default applies)."""
        if ttl is not None:
            self._keep(element_id, stamp + ttl)

    def _keep(self, element_id: int, deadline: int) -> None:
        deadlines = self.deadlines
        if (self._ascending and deadlines and element_id < next(reversed(deadlines))
                and element_id not in deadlines):
            self._ascending = False
        deadlines[element_id] = deadline

    def deadline(self, element_id: int, stamp: int) -> int | None:
        """When the element expires (ms), or ``None`` when it never does."""
        found = self.deadlines.get(element_id)
        if found is not None:
            return found
        if self.retained is not None:
            found = self.retained.get(element_id)
            if found is not None:
                return found
        default = self.default_ms
        return None if default is None else stamp + default

    def is_expired(self, element_id: int, stamp: int, now: int) -> bool:
        deadline = self.deadline(element_id, stamp)
        return deadline is not None and now >= deadline

    def forget(self, element_id: int) -> None:
        """The element left the cell (expired or purged)."""
        if self.deadlines:
            self.deadlines.pop(element_id, None)
        if self.retained is not None:
            self._retained_pop(element_id)

    def _retained_pop(self, element_id: int) -> int | None:
        retained = self.retained
        assert retained is not None
        found = retained.pop(element_id)
        if not retained:
            self.retained = None
        return found

    def take(self, element_id: int) -> None:
        """The element was handed out; its deadline is kept a while for :meth:`give_back`."""
        deadline = self.deadlines.pop(element_id, None) if self.deadlines else None
        if self.retained is not None:
            found = self._retained_pop(element_id)
            deadline = found if deadline is None else deadline
        if deadline is not None:
            taken = self.taken
            taken[element_id] = deadline
            if len(taken) > TAKEN_KEPT:
                taken.popitem(last=False)

    def give_back(self, element_id: int) -> None:
        """A taken element is back in the cell: its deadline applies again."""
        if self.taken:
            deadline = self.taken.pop(element_id, None)
            if deadline is not None:
                self._keep(element_id, deadline)

    def forget_below(self, element_id: int) -> None:
        """Every element below ``element_id`` left (a topic's head was dropped)."""
        deadlines = self.deadlines
        if deadlines and self._ascending:  # the ids below come first
            if next(reversed(deadlines)) < element_id:
                deadlines.clear()
            else:
                gone = _below(deadlines, element_id)
                if 2 * gone > len(deadlines):  # most leave: the rest stay, in one go
                    rest = list(islice(deadlines.items(), gone, None))
                    deadlines.clear()
                    deadlines.update(rest)
                else:
                    for key in list(islice(deadlines, gone)):
                        del deadlines[key]
        elif deadlines:
            for key in [k for k in deadlines if k < element_id]:
                del deadlines[key]
            self._ascending = not deadlines
        if self.retained is not None:
            self.retained.forget_below(element_id)
            if not self.retained:
                self.retained = None

    def own_run(self, first: int, end: int, now: int) -> int:
        """The first id of ``first..end - 1`` without a deadline of its own (in
        :attr:`deadlines`) at or before ``now``, or ``end``: where a run of elements
        expired by their own ttls ends. A run that ends soon is found by lookups; a
        longer one, the ids in order (a topic's), is read in order from its place, a
        span at a time, each span twice as long as the one before (no Python step per
        id; finding the place costs a machine step per id before it, in proportion to
        the lookups made first)."""
        own = self.deadlines
        if not own or first >= end:
            return first
        if not self._ascending:
            return _run_looked_up(own, first, end, now)
        stop = min(end, first + 16 + max(0, first - next(iter(own))) // 16)
        at = _run_looked_up(own, first, stop, now)
        return at if at < stop or at == end else _run_in_order(own, at, end, now)

    def first_own(self, first: int, end: int) -> int:
        """The first id of ``first..end - 1`` with a deadline of its own (in
        :attr:`deadlines`), or ``end``: a lookup of each id up to it, never a step per
        deadline of an id below ``first`` (a queue's delayed elements)."""
        own = self.deadlines
        if not own:
            return end
        return next(filter(own.__contains__, range(first, end)), end)

    def expired_run(self, first: int, end: int, now: int) -> int:
        """How many of the elements ``first..end - 1`` :attr:`retained` holds (the lowest
        it holds first, none in :attr:`deadlines`) have expired at ``now`` in a row, from
        ``first``; 0 when ``first`` is not such an element (:meth:`is_expired` tells
        one by one)."""
        if self.retained is None or (self.deadlines and first in self.deadlines):
            return 0
        return self.retained.expired_run(first, end, now)

    def forget_run(self, first: int, end: int) -> None:
        """The retained elements ``first..end - 1`` (the lowest held) left, expired."""
        if self.retained is not None:
            self.retained.forget_below(end)
            if not self.retained:
                self.retained = None

    def held_deadlines(self) -> dict[int, int]:
        """Every per-message deadline held, by element id (the retained ones too)."""
        return {k: v for k, v in self._held_pairs()}

    def _held_pairs(self) -> list[list[int]]:
        """``[[id, deadline], ...]`` of :meth:`held_deadlines`, ascending."""
        if self.retained is None:
            return [[k, v] for k, v in sorted(self.deadlines.items())]
        return merged_pairs(self.retained, self.deadlines)

    def clear_deadlines(self) -> None:
        """Forget every per-message deadline (the elements left)."""
        self.deadlines.clear()
        self._ascending = True
        self.retained = None

    def rules(self) -> list[int | None]:
        """``[default_ms, max_age_ms]``."""
        return [self.default_ms, self.max_age_ms]

    def to_list(self, *, runs: bool = True) -> list[Any]:
        """``[default_ms, max_age_ms, expired, [[id, deadline], ...], [[id, deadline],
        ...], skipped]``: the rules, the count, the deadlines of the elements held and of
        the last ones taken (oldest first), the gaps (the snapshot form); a group's
        :attr:`retained` deadlines follow as their own form
        (:meth:`~.expiry_retained.RetainedDeadlines.to_list`), not among those held;
        without ``runs``, among those held (what clients of protocol 3 read)."""
        if not runs:  # the form before retained deadlines had their own
            return [self.default_ms, self.max_age_ms, self.expired, self._held_pairs(),
                    [[k, v] for k, v in self.taken.items()], self.skipped]
        own = [[k, v] for k, v in sorted(self.deadlines.items())]
        doc = [self.default_ms, self.max_age_ms, self.expired, own,
               [[k, v] for k, v in self.taken.items()], self.skipped]
        if self.retained is not None:
            doc.append(self.retained.to_list())
        return doc

    @classmethod
    def from_list(cls, doc: Any) -> Expiry:
        """:meth:`to_list` back (with or without the retained deadlines); ``ValueError``
        naming what is wrong."""
        if type(doc) is not list or len(doc) not in (6, 7):
            raise ValueError("an expiry record is [default_ms, max_age_ms, expired, "
                             f"deadlines, taken, skipped], not {str(doc)[:60]}")
        out = cls(checked_ms(doc[0], "default ttl"), checked_ms(doc[1], "max age"))
        if type(doc[2]) is not int or doc[2] < 0:
            raise ValueError(f"an expired count must be an int >= 0, not {str(doc[2])[:20]}")
        out.expired = doc[2]
        if type(doc[5]) is not int or doc[5] < 0:
            raise ValueError(f"a skipped count must be an int >= 0, not {str(doc[5])[:20]}")
        out.skipped = doc[5]
        own = _pairs(doc[3])
        out.deadlines.update(own)
        out._ascending = all(map(lt, (k for k, _ in own), (k for k, _ in own[1:])))
        out.taken.update(_pairs(doc[4]))
        if len(doc) == 7:
            out.retained = RetainedDeadlines.from_list(doc[6])
            if any(out.retained.get(i) is not None for i in out.deadlines):
                raise ValueError("an expiry record holds a deadline twice (own and retained)")
        return out


def _run_looked_up(own: dict[int, int], first: int, end: int, now: int) -> int:
    """:meth:`Expiry.own_run` by a lookup of each id."""
    at = first
    while at < end and (found := own.get(at)) is not None and now >= found:
        at += 1
    return at


def _run_in_order(own: dict[int, int], first: int, end: int, now: int) -> int:
    """:meth:`Expiry.own_run` by spans of ``own`` read in order from ``first``'s place,
    its ids ascending: a span whose ids follow on without a gap and whose latest
    deadline is at or before ``now`` expired whole; in the first other one, the first
    id after a gap or with a later deadline ends the run."""
    ids, deadlines = iter(own), iter(own.values())
    place = _below(own, first)
    next(islice(ids, place, place), None)  # on to the place
    next(islice(deadlines, place, place), None)
    at, span, left = first, 16, len(own) - place
    while at < end:
        k = min(span, end - at, left)
        if not k:
            return at
        if next(islice(ids, k - 1, None)) != at + k - 1 or max(islice(deadlines, k)) > now:
            place += at - first
            keys = list(islice(own, place, place + k))
            values = list(islice(own.values(), place, place + k))
            ended = map(or_, map(ne, keys, range(at, at + k)), map(lt, repeat(now), values))
            return at + list(ended).index(True)
        at, span, left = at + k, 2 * span, left - k
    return end


def _below(own: dict[int, int], element_id: int) -> int:
    """How many ids of ``own`` (ascending) are below ``element_id``: its distance from
    the first when no id is missing in between, else bisections of its first ids, four
    times as many each time (a machine step per id, about as many as the answer)."""
    guess = element_id - next(iter(own))
    if guess <= 0 or next(islice(own, guess, None), None) == element_id:
        return max(0, guess)
    m = 64
    while True:
        ids = list(islice(own, m))
        if len(ids) < m or ids[-1] >= element_id:
            return bisect_left(ids, element_id)
        m *= 4


def _pairs(doc: Any) -> list[tuple[int, int]]:
    if type(doc) is not list:
        raise ValueError("expiry deadlines must be a list of [id, deadline_ms]")
    out: list[tuple[int, int]] = []
    for pair in doc:
        if (type(pair) is not list or len(pair) != 2
                or not all(type(x) is int for x in pair) or pair[0] < 0):
            raise ValueError(f"an expiry deadline is [id >= 0, deadline_ms] of ints, "
                             f"not {str(pair)[:40]}")
        out.append((pair[0], pair[1]))
    return out
