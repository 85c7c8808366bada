"""What client sessions popped and did not give back (:mod:`.session_popped`), in the
state machine's snapshot: key ``session_popped``, left out while no session holds a
record::

    [[session, [[seq, queue, result, [id, ...]], ...]], ...]

the sessions in the record's order, each one's pops oldest first, each pop's ids those
not given back in the order it handed them out. ``result`` is the pop's result
(``[values, id runs]`` or ``[values, id runs, headers]``), or ``None`` when the
session's kept results hold it under ``seq`` (``sessions``; so a result is in a
snapshot once). Key ``session_popped_checking`` (``true``, left out while ``false``):
checked give-backs are checked against the record (:attr:`.SessionPopped.checking`).
A snapshot without the keys restores an empty record, not checking (an earlier
version's: it covers no checked give-back). A malformed entry makes the snapshot not
restore (``ValueError``); a record over the bounds is held within them as applying
would.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import shown
from .client_sessions import CLIENT_SESSION_BASE
from .results import result_size
from .session_popped import BYTES, Pop, SessionPopped, elements
from .session_results import Session

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: The key of the record in the state machine's snapshot.
KEY = "session_popped"
#: The key of :attr:`.SessionPopped.checking` in the state machine's snapshot.
CHECKING = "session_popped_checking"


def capture(sm: StateMachine) -> list[Any] | None:
    """``sm``'s record as plain data (``None``: no session holds one). Only containers
    are made here: results are shared with the state, which never changes them."""
    by_session = sm.popped.by_session
    if not by_session:
        return None
    sessions = sm.sessions
    doc: list[Any] = []
    for sid, record in by_session.items():
        session = sessions.get(sid)
        done = {} if session is None else session.done
        doc.append([sid, [[pop.seq, pop.name,
                           None if done.get(pop.seq) is pop.result else pop.result,
                           list(pop.left)] for pop in record.pops.values()]])
    return doc


def restore(sm: StateMachine, doc: Any, checking: Any = None) -> SessionPopped:
    """The record ``doc`` (:func:`capture`'s) holds, given ``sm``'s restored sessions,
    ``checking`` or not (``None``: not); raises ``ValueError`` when it is malformed."""
    if checking is not None and checking is not True:
        raise ValueError(f"snapshot part {CHECKING!r} must be true, got {shown(checking)}")
    popped = SessionPopped(checking is True)
    if doc is None:
        return popped
    if type(doc) is not list:
        raise ValueError(f"snapshot part {KEY!r} must be a list of [session, [pop, ...]]")
    for item in doc:
        if type(item) is not list or len(item) != 2 or type(item[1]) is not list:
            raise ValueError(f"snapshot part {KEY!r}: {shown(item)} is not "
                             "[session, [pop, ...]]")
        sid = item[0]
        session = sm.sessions.get(sid) if type(sid) is int else None
        if session is None or sid <= CLIENT_SESSION_BASE:
            raise ValueError(f"snapshot part {KEY!r}: {shown(sid)} is not a client session "
                             "the snapshot holds")
        if sid in popped.by_session:
            raise ValueError(f"snapshot part {KEY!r}: session {sid:x} is listed twice")
        try:
            popped.restored(sid, [_pop(session, entry) for entry in item[1]])
        except ValueError as exc:
            raise ValueError(f"snapshot part {KEY!r}: {exc}") from None
    popped.bound()
    return popped


def _pop(session: Session, entry: Any) -> Pop:
    """One pop of ``session``'s record from its snapshot entry."""
    if (type(entry) is not list or len(entry) != 4 or type(entry[0]) is not int
            or entry[0] < 1 or type(entry[1]) is not str or not entry[1]
            or type(entry[3]) is not list or not entry[3]):
        raise ValueError(f"{shown(entry)} is not [seq, queue, result, [id, ...]]")
    seq, name, result, ids = entry
    size = None
    if result is None:  # the session keeps it as the op's result
        result, size = session.done.get(seq), session.sizes.get(seq)
    found = (elements(result[0], result[1])
             if type(result) is list and len(result) in (2, 3) else None)
    if not found:
        raise ValueError(f"pop {seq} has no result of a pop ([values, id runs], one value "
                         f"an id), got {shown(result)}")
    if size is None:
        size = result_size(result, BYTES)
    if size > BYTES:
        raise ValueError(f"pop {seq} holds a result over the record's {BYTES:,} bytes")
    positions: dict[int, int] = {}
    for n, (i, _, _) in enumerate(found):  # an id handed out twice: held as its first copy
        positions.setdefault(i, n)
    left: dict[int, int] = {}
    for i in ids:
        if type(i) is not int or i not in positions or i in left:
            raise ValueError(f"pop {seq} does not hand out element {shown(i)} once")
        left[i] = positions[i]
    return Pop(seq, name, result, left, size)
