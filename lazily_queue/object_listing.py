"""Which objects a status lists, and one page of every object of a kind (``/objects.json``).

A status (the page, ``/status.json``, ``lazily-queue status``) lists at most ``limit``
objects of each kind (:data:`STATUS_OBJECTS` by default), the largest: queues by depth,
work queues by pending + in flight + dead letters, topics by their most lagging
subscriber, then by retained elements (ties by name). Its ``objects`` section gives,
per kind, how many there are (``total``) and how many are listed (``listed``), and its
``totals`` are sums over every object, listed or not. Building it still reads every
object once (a few integer reads each, the topics' subscriber cursors included), but
only the listed ones get an entry, so its size no longer grows with the cluster.

:func:`object_page` reaches every other object: those of one kind whose name starts
with ``prefix``, sorted by name, :data:`PAGE_SIZE` from ``offset`` on, each with the
entry a status gives it; the sorted names are kept between pages
(:func:`sorted_names`). :func:`page_params` checks the query
(``?kind=queues&prefix=P&offset=N``) and raises :class:`BadListing` saying what is
accepted.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
from collections.abc import Callable, Mapping
from typing import Any

from .names import MAX_NAME_LENGTH
from .subscriber_listing import MAX_OFFSET, BadListing

#: Objects of each kind a status lists by default.
STATUS_OBJECTS = 100
#: Objects listed per page of ``/objects.json``.
PAGE_SIZE = 100
#: Objects a sliced build reads between two turns of the event loop.
SLICE = 1000
#: The kinds a status lists, in its order.
KINDS = ("queues", "topics", "work_queues")

#: The figures :func:`size_of` gives for each kind.
_WIDTHS = {"queues": 1, "topics": 2, "work_queues": 3}
#: One kind of a status: its name, the view's table and the entry of one object.
Section = tuple[str, Mapping[str, Any], Callable[[str, Any], dict[str, Any]]]


def size_of(kind: str, obj: Any) -> tuple[int, ...]:
    """What a status ranks an object by (larger first), and the figures its totals sum:
    ``(len,)`` of a queue, ``(lag, retained)`` of a topic, ``(pending, in_flight,
    dead_letters)`` of a work queue."""
    if kind == "queues":
        return (obj.len(),)
    if kind == "topics":
        end = obj.end_offset()
        cursors = [rec["cursor"] for rec in obj.subscriptions().values()]
        return (end - min(cursors, default=end), end - obj.base_offset())
    core = obj.core
    return (core.pending_len(), core.in_flight_len(), core.dead_letter_len())


class Ranking:
    """The largest ``limit`` objects of one kind, and the sums of every object's figures."""

    __slots__ = ("heap", "kind", "limit", "sums", "top", "total")

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self.total = 0
        self.top = 0  # the largest first figure
        self.sums = [0] * _WIDTHS[kind]
        self.heap: list[tuple[tuple[int, ...], _Name]] = []

    def add(self, name: str, obj: Any) -> None:
        figures = size_of(self.kind, obj)
        self.total += 1
        if figures[0] > self.top:
            self.top = figures[0]
        sums = self.sums
        for i, figure in enumerate(figures):
            sums[i] += figure
        heap = self.heap
        if len(heap) < self.limit:
            heapq.heappush(heap, (figures, _Name(name)))
        elif self.limit and figures >= heap[0][0]:
            entry = (figures, _Name(name))
            if entry > heap[0]:
                heapq.heapreplace(heap, entry)

    def names(self) -> list[str]:
        return sorted(str(name) for _, name in self.heap)


class _Name(str):
    """A name that sorts backwards, so that of two objects of one size the smaller name
    ranks higher."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return str.__gt__(self, other)  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        return str.__lt__(self, other)  # type: ignore[operator]


def _finish(rankings: dict[str, Ranking], listed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    status: dict[str, Any] = dict(listed)
    status["objects"] = {kind: {"total": r.total, "listed": len(listed[kind])}
                         for kind, r in rankings.items()}
    queues, topics, works = (rankings[k] for k in KINDS)
    status["object_totals"] = {"queued": queues.sums[0], "pending": works.sums[0],
                               "in_flight": works.sums[1], "dead_letters": works.sums[2],
                               "topic_lag": topics.top}
    return status


def listed_sections(sections: list[Section], limit: int) -> dict[str, Any]:
    """Each kind's ``limit`` largest objects (by name), ``objects`` and ``object_totals``
    (see the module docstring)."""
    rankings = {kind: Ranking(kind, limit) for kind, _, _ in sections}
    listed: dict[str, dict[str, Any]] = {}
    for kind, table, entry in sections:
        ranking = rankings[kind]
        for name, obj in table.items():
            ranking.add(name, obj)
        listed[kind] = {name: entry(name, table[name]) for name in ranking.names()}
    return _finish(rankings, listed)


async def listed_sections_sliced(sections: list[Section], limit: int,
                                 plain: Callable[[Any], Any]) -> dict[str, Any]:
    """:func:`listed_sections` as plain data, the loop running every :data:`SLICE`
    objects (an object deleted meanwhile is left out)."""
    rankings = {kind: Ranking(kind, limit) for kind, _, _ in sections}
    listed: dict[str, dict[str, Any]] = {}
    for kind, table, entry in sections:
        ranking = rankings[kind]
        names = list(table)
        for start in range(0, len(names), SLICE):
            for name in names[start:start + SLICE]:
                found = table.get(name)
                if found is not None:
                    ranking.add(name, found)
            await asyncio.sleep(0)
        shown: dict[str, Any] = {}
        for name in ranking.names():
            found = table.get(name)
            if found is not None:
                shown[name] = plain(entry(name, found))
        listed[kind] = shown
    return _finish(rankings, listed)


def page_params(query: Mapping[str, str]) -> tuple[str, str, int]:
    """``(kind, prefix, offset)`` from ``?kind=K&prefix=P&offset=N``."""
    kind = query.get("kind")
    if kind not in KINDS:
        raise BadListing(f"kind= must be one of {', '.join(KINDS)}, not "
                         f"{(kind or '')[:40]!r}")
    prefix = query.get("prefix", "")
    if len(prefix) > MAX_NAME_LENGTH:
        raise BadListing(f"prefix must be at most {MAX_NAME_LENGTH} characters "
                         f"(a name is), not {len(prefix)}")
    raw = query.get("offset", "")
    if raw == "":
        return kind, prefix, 0
    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_OFFSET))
            and int(raw) <= MAX_OFFSET):
        raise BadListing(f"offset must be a whole number of 0..{MAX_OFFSET}, "
                         f"not {raw[:40]!r}")
    return kind, prefix, int(raw)


def object_page(sections: list[Section], kind: str, prefix: str = "", offset: int = 0,
                plain: Callable[[Any], Any] = lambda v: v) -> dict[str, Any]:
    """The page of ``kind`` (see the module docstring): ``objects`` (name to entry, in
    name order), ``matching``, ``total``, ``offset`` and ``limit``. The names matching
    ``prefix`` are a run of the table's sorted names (:func:`sorted_names`)."""
    table, entry = next((t, e) for k, t, e in sections if k == kind)
    names = sorted_names(table)
    start = bisect.bisect_left(names, prefix)
    end = bisect.bisect_left(names, True, lo=start, key=lambda n: not n.startswith(prefix))
    shown = names[start + offset:min(end, start + offset + PAGE_SIZE)]
    return {"kind": kind, "prefix": prefix, "offset": offset, "limit": PAGE_SIZE,
            "matching": end - start, "total": len(table),
            "objects": {name: plain(entry(name, table[name])) for name in shown}}


#: Tables whose names :func:`sorted_names` keeps sorted (the least recently used
#: beyond this many are dropped).
INDEXED_TABLES = 8
#: Names added or removed since the last call past which the names are sorted anew
#: (fewer are inserted and removed in place).
RESORT_CHANGES = 1000
_indexes: dict[int, tuple[Mapping[str, Any], set[str], list[str]]] = {}


def sorted_names(table: Mapping[str, Any]) -> list[str]:
    """The names of ``table`` in order (do not change the list). Kept between calls: a
    call compares the table's names with the kept ones (a pass of set lookups) and
    sorts only the names declared since, so a page costs no sort of every object."""
    found = _indexes.pop(id(table), None)
    if found is not None and found[0] is table:
        keys, names = found[1], found[2]
        if table.keys() != keys:
            keys, names = _follow(table, keys, names)
    else:
        keys, names = set(table), sorted(table)
    _indexes[id(table)] = (table, keys, names)
    while len(_indexes) > INDEXED_TABLES:
        del _indexes[next(iter(_indexes))]
    return names


def _follow(table: Mapping[str, Any], keys: set[str], names: list[str]
            ) -> tuple[set[str], list[str]]:
    """``keys`` and ``names`` (sorted) changed in place to ``table``'s names, or made
    anew when more than :data:`RESORT_CHANGES` changed."""
    changed = keys.symmetric_difference(table)
    if len(changed) > RESORT_CHANGES:
        return set(table), sorted(table)
    added = {name for name in changed if name in table}
    removed = changed - added
    for name in removed:
        del names[bisect.bisect_left(names, name)]
    for name in sorted(added):
        bisect.insort(names, name)
    keys -= removed
    keys |= added
    return keys, names
