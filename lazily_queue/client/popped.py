"""What a client without the produce permission popped, so that it gives back only that.

Giving popped elements back to the head (``QUEUE_UNPOP_STAMPED``,
``QUEUE_UNPOP_HEADERS``: a prefetch's rest, a pop whose caller went away) puts values in
a queue past its capacity. A client that may push may do so; one that may only consume
may give back an element only under the id its session popped it under, with the value
and headers it was popped with, once, and only among its session's last
:data:`~..replicated.session_popped.SESSION_ELEMENTS` popped elements
(:func:`give_back_refusal`). Anything else is refused before it is proposed. A
give-back naming one element twice (both copies of an id a producer's give-back put back
twice, taken by one pop: the record holds the element once) is proposed with one copy
(:func:`one_copy_each`), so the other elements it names are not refused with it. The older
``QUEUE_UNPOP(_MANY)`` (values without ids) are not open to such a client at all.

What a session popped and has not given back is taken from the ops as they applied in
it (:mod:`..replicated.session_popped`), on whichever member proposed them: a client
whose member died, or whose link dropped, gives back through its next member what its
session popped. A pop sent under a sequence number another op of the session used is
answered without applying, and notes nothing. A give-back admitted here marks its
elements (:class:`Giving`): another op of the session giving them back is refused while
the record holds them; the same op sent again (a retry under its sequence number) is
proposed and applies at most once. It is proposed checked (:data:`CHECKED`): it
applies only if the session's record, as the log has it when it applies, still holds
its elements, so two give-backs of one element admitted by two members' gates before
either applied apply once (the other is answered ``PermissionDenied``). A retry of a
give-back whose earlier attempt applied (taking its elements off the record) is
proposed all the same and answered from the session, when the member holds it as
applied. A give-back refused here goes again under its number, a few times, on the
next member every other time (:func:`refused_pause`), when nobody awaits it (the
library's own: a pop's whose caller went away, an iteration's rest) or when an earlier
attempt's answer was lost (the member reached may not have applied the pop yet, as
after a change of leader); refused every time, the latter is reported by the client
with its outcome unknown (:func:`retry_refused`): that attempt may yet apply.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..core import ids
from ..core.headers import checked_table
from ..core.ids import Run
from ..errors import OperationFailed, shown
from ..replicated import ops as C
from ..replicated.session_popped import GIVE_BACKS as GIVE_BACKS
from ..replicated.session_popped import (
    SESSION_ELEMENTS,
    Pop,
    SessionRecord,
    digest,
    elements,
)

#: The checked form a member proposes of each give-back it admitted here.
CHECKED = {plain: checked for checked, plain in C.CHECKED_GIVE_BACKS.items()}
#: Elements whose give-back one member remembers having admitted (all clients).
GIVING_KEPT = 65536
#: Times a give-back nobody awaits is sent again after a member's gate refused it.
REFUSED_TRIES = 8
#: The pause before the first of them (seconds); it doubles up to :data:`REFUSED_PAUSE_MAX`.
REFUSED_PAUSE = 0.1
REFUSED_PAUSE_MAX = 3.0


def refused_pause(refusals: int) -> float | None:
    """The pause before a give-back nobody awaits (the library's own, of elements its
    session popped: a pop's whose caller went away), or one sent again after an earlier
    attempt's answer was lost, goes again, under its number, after
    its ``refusals``-th refusal at a member's gate (``None``: no more). That member may
    not have applied the pop yet, or holds no record of it (of an earlier version, it
    installed a snapshot or restarted since): the session sends it again, leaving that
    member every other time for the next. Under its number it applies at most once, and
    a member that applied an earlier attempt answers it as applied."""
    if refusals >= REFUSED_TRIES:
        return None
    return min(REFUSED_PAUSE_MAX, REFUSED_PAUSE * float(2 ** refusals))


class Giving:
    """The give-backs one member admitted lately (all its links): for each element, by
    the pop that handed it out, the sequence number of the session's op giving it back."""

    def __init__(self, limit: int = GIVING_KEPT) -> None:
        self._limit = limit
        self._by: OrderedDict[tuple[int, str, int, int], int] = OrderedDict()

    def admit(self, marks: list[tuple[int, str, int, int]], seq: int) -> bool:
        """Mark ``marks`` (``(session, queue, id, pop seq)``) as given back by op ``seq``,
        unless another op of the session gives one of them back (False)."""
        by = self._by
        if any(by.get(mark, seq) != seq for mark in marks):
            return False
        for mark in marks:
            by[mark] = seq
            by.move_to_end(mark)
        while len(by) > self._limit:
            by.popitem(last=False)
        return True


def give_back_refusal(record: SessionRecord | None, giving: Giving, session: int,
                      seq: int, code: int, args: list[Any], client: str) -> str | None:
    """Why client ``client`` may not give back what op ``seq`` of its ``session`` names
    (``code``, ``args``), given the session's ``record`` of popped elements (``None``: it
    may; its elements are then marked in ``giving``)."""
    name = args[0]
    found = elements(args[1], args[2])
    headers = _headers_of(code, args)
    if found is None or headers is None:
        return None  # malformed: the state machine refuses it, naming why
    marks: list[tuple[int, str, int, int]] = []
    for i, stamp, value in found:
        pop = _as_popped(record, name, i, stamp, value, headers.get(i))
        if pop is None:
            return (f"client {client!r} may give back to queue {shown(name)} only elements its "
                    "session popped and did not give back, with the values, headers and stamps "
                    f"they were popped with (among its last {SESSION_ELEMENTS:,}); giving "
                    "other values to the head needs the produce permission")
        marks.append((session, name, i, pop.seq))
    if len(set(marks)) != len(marks) or not giving.admit(marks, seq):
        return (f"client {client!r} gives back elements of queue {shown(name)} twice (another "
                "operation of its session names them): giving an element back more than "
                "once needs the produce permission")
    return None


def one_copy_each(record: SessionRecord | None, code: int, args: list[Any]) -> list[Any] | None:
    """The give-back ``args`` (``code``) naming an element more than once (two copies of
    one id, as a producer's give-back applied twice leaves them, taken by one pop) with
    one copy of each, in place of the first: the first copy as the session's ``record``
    holds it popped, else the first (``None``: it names each element once, or is
    malformed). The record holds an element once however many copies a pop took, and
    such a client gives it back once."""
    found = elements(args[1], args[2])
    if found is None or len({i for i, _, _ in found}) == len(found):
        return None
    headers = _headers_of(code, args)
    if headers is None:
        return None
    chosen: dict[int, tuple[int, int, Any]] = {}
    matched: set[int] = set()
    for element in found:
        i, stamp, value = element
        if i in matched:
            continue
        if _as_popped(record, args[0], i, stamp, value, headers.get(i)) is not None:
            matched.add(i)
            chosen[i] = element
        elif i not in chosen:
            chosen[i] = element
    values: list[Any] = []
    runs: list[Run] = []
    for i, (_, stamp, value) in chosen.items():  # in the order of each id's first copy
        values.append(value)
        ids.append(runs, i, 1, stamp)
    return [args[0], values, runs, *args[3:]]


def _headers_of(code: int, args: list[Any]) -> dict[int, Any] | None:
    """A give-back's headers by id, read as the state machine reads them: the last one
    wins (``None``: malformed)."""
    if code != C.QUEUE_UNPOP_HEADERS:
        return {}
    try:
        return dict(checked_table(args[3], "headers"))
    except ValueError:
        return None


def _as_popped(record: SessionRecord | None, name: str, i: int, stamp: int, value: Any,
               headers: Any) -> Pop | None:
    """The pop of ``record`` holding element ``i`` of queue ``name`` as popped with
    ``stamp``, ``value`` and ``headers`` (``None``: none does)."""
    pop = None if record is None else record.find(name, i)
    if pop is None or pop.stamp(i) != stamp:
        return None
    kept = digest(*pop.element(i))
    return pop if kept and kept == digest(value, headers) else None


def retry_refused(error: Exception) -> OperationFailed:
    """The client's error for a give-back refused on a retry, an earlier attempt's answer
    lost (the member it reached holds the elements as given back, or does not hold the
    pop, without holding that attempt as applied): its outcome is unknown."""
    failed = OperationFailed(
        f"{error}; it was sent before, through a link whose answer was lost: its outcome "
        "is unknown (that attempt may have given the elements back; read the queue to "
        "learn whether it did)", applied=None)
    failed.__cause__ = error
    return failed
