"""Message ids and enqueue stamps of a FIFO, kept as runs beside its elements.

Every element a FIFO accepts gets the next id of its queue (0, 1, 2, ...) and the stamp
of the moment it was accepted (milliseconds; the leader's time on a replicated queue, the
cell's clock on a local one, 0 without a clock). Consecutive ids that share a stamp form
one *run* ``[first_id, count, stamp]``, so a push extends the last run instead of
allocating a record per element: runs are as many as distinct stamps (or elements given
back out of order), not as many as elements.

The runs list, in FIFO order, covers exactly the elements of the queue. A pop takes ids
from the first run; elements given back to the head (``unpop``) come with the runs their
pop returned, so an element keeps its id and stamp however often it is given back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, MutableSequence
from typing import Any

from ..errors import shown

Run = list[int]
"""``[first_id, count, stamp]``: ``count`` consecutive ids from ``first_id``, one stamp."""


def take(runs: deque[Run], n: int) -> list[Run]:
    """Remove the first ``n`` ids (``n`` at most what ``runs`` covers); return their runs."""
    taken: list[Run] = []
    while n:
        run = runs[0]
        count = run[1]
        if count <= n:
            taken.append(runs.popleft())
            n -= count
        else:
            taken.append([run[0], n, run[2]])
            run[0] += n
            run[1] = count - n
            n = 0
    return taken


def append(runs: MutableSequence[Run], first: int, count: int, stamp: int) -> None:
    """Add ``count`` ids from ``first`` at the tail, extending the last run when they
    continue it with the same stamp."""
    if runs:
        last = runs[-1]
        if last[2] == stamp and last[0] + last[1] == first:
            last[1] += count
            return
    runs.append([first, count, stamp])


def prepend(runs: deque[Run], given: Iterable[Run]) -> None:
    """Put ``given`` (runs in FIFO order) back at the head, merging where they continue."""
    for run in reversed(list(given)):
        first, count, stamp = run
        if runs:
            head = runs[0]
            if head[2] == stamp and first + count == head[0]:
                head[0] = first
                head[1] += count
                continue
        runs.appendleft([first, count, stamp])


def tail(runs: list[Run], k: int) -> list[Run]:
    """The runs of the last ``k`` ids ``runs`` covers (``k`` at most that many)."""
    out: list[Run] = []
    for first, count, stamp in reversed(runs):
        if k <= 0:
            break
        if count <= k:
            out.append([first, count, stamp])
            k -= count
        else:
            out.append([first + count - k, k, stamp])
            k = 0
    out.reverse()
    return out


def expand(runs: Iterable[Run]) -> Iterator[tuple[int, int]]:
    """``(id, stamp)`` of every id the runs cover, in order."""
    for first, count, stamp in runs:
        for i in range(first, first + count):
            yield i, stamp


def covered(runs: Iterable[Run]) -> int:
    """How many ids the runs cover."""
    return sum(run[1] for run in runs)


def checked_runs(doc: Any, what: str = "runs") -> list[Run]:
    """``doc`` as a list of runs (from a peer, a client or a snapshot), or ``ValueError``
    naming what is wrong."""
    if type(doc) is not list:
        raise ValueError(f"{what} must be a list of [first_id, count, stamp], "
                         f"not {type(doc).__name__}")
    out: list[Run] = []
    for run in doc:
        if (type(run) is not list or len(run) != 3
                or not all(type(x) is int for x in run) or run[0] < 0 or run[1] < 1):
            raise ValueError(f"{what}: {shown(run)} is not a run [first_id >= 0, count >= 1, "
                             "stamp] of ints")
        out.append([run[0], run[1], run[2]])
    return out
