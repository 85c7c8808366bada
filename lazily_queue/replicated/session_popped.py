"""What each client session popped and has not given back, as this replica applied it.

A member lets a client without the produce permission give back to a queue's head only
elements its session popped, under their ids and with the values, headers and stamps
they were popped with (:mod:`..client.popped`). The record is taken from the ops as they apply in
the client's session, so every member holds it whichever member proposed them, and a
client that fails over to another member gives back there what its session popped:

- ``QUEUE_POP_STAMPED`` / ``QUEUE_POP_HEADERS`` applied (not answered from the session
  as a retry) note what they handed out: the pop's result itself, shared with the
  session's kept results, nothing encoded or copied;
- give-backs applied (``QUEUE_UNPOP_STAMPED`` / ``QUEUE_UNPOP_HEADERS`` and their
  checked forms) take what they gave back off, so it is not given back twice;
- a session dropped or ended takes its record with it, and a queue deleted its pops.

Such a client's give-back is proposed checked (``ops.CHECKED_GIVE_BACKS``): it applies
only when the record holds every element it names, once, as popped in its session and
not given back (:meth:`SessionPopped.refusal`), else nothing of it applies. So two
give-backs of one element, each admitted by a member's gate before the other applied,
apply once. That answer must be the same on every replica, and the record is the same
on every replica that applied the same ops from an empty record, or restored a snapshot
holding it: it is part of the snapshot (:mod:`.session_popped_snapshot`) and its bounds
give up pops in an order that only depends on it (a session's last
:data:`SESSION_ELEMENTS` popped elements; past :data:`ELEMENTS` elements or
:data:`BYTES` of results over all sessions, as the sessions' kept results count them,
the sessions of the clients holding the largest share of either bound in all their
sessions give up their oldest pops first, a client's sessions holding the most bytes
first). Sessions expire by the entries' time and end by ops of the
log; a pop answered from its session as a retry notes nothing anywhere. A replica that
restored a snapshot of an earlier version holds nothing of the pops before it, while
one that applied them does. Hence the record is *checking*
(:attr:`SessionPopped.checking`, in the snapshot) only from a ``POPPED_CHECKING`` op
(:meth:`SessionPopped.start_checking`), which a member proposes first in its term as it
becomes leader while the applied state is not checking
(:meth:`~.proposing.Proposing.leading_ops`), and its maintenance again while it still
is not: it empties every session's record, on every replica at one entry (later ones
change nothing). A checked give-back applied before any did so applies unchecked, as
the gate that admitted it found, and starts checking the same way. A snapshot that
covers either is of this version and holds the flag; only an earlier version's
snapshot lacks it, and it covers neither. The pops before the start can no longer be
given back by such a client (as after a restart of an earlier version): a fresh
cluster has none (the op precedes them in the log), one upgraded from an earlier
version those applied before its first leader of this one.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import cbor2

from ..core import ids
from ..errors import shown
from ..raft.values import tagged
from . import ops
from .client_sessions import owner_of
from .family import Family
from .ops import OpError
from .results import result_size

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Popped elements one session's record holds at most (its oldest pops go first).
SESSION_ELEMENTS = 4096
#: Popped elements all sessions' records hold at most.
ELEMENTS = 65536
#: Bytes of pop results all sessions' records hold at most.
BYTES = 64 * 1024 * 1024
POPS = frozenset({ops.QUEUE_POP_STAMPED, ops.QUEUE_POP_HEADERS})
GIVE_BACKS = frozenset({ops.QUEUE_UNPOP_STAMPED, ops.QUEUE_UNPOP_HEADERS})
#: The ops the record follows.
FOLLOWED = POPS | GIVE_BACKS | frozenset(ops.CHECKED_GIVE_BACKS)
#: The code of a checked give-back's refusal (the client's ``PermissionDenied``).
REFUSED = "give_back_refused"

#: One element popped: ``(queue, id)``.
Key = tuple[str, int]


def digest(value: Any, headers: Any) -> bytes:
    """A digest of an element's value and headers, its tuples told from lists (``b""``:
    one no digest matches)."""
    try:
        data = cbor2.dumps(tagged([value, headers]), canonical=True)
    except (cbor2.CBOREncodeError, TypeError, ValueError):
        return b""
    return hashlib.blake2b(data, digest_size=16).digest()


def give_back(sm: StateMachine, sid: int, code: int, args: list[Any]) -> Any:
    """Apply the checked give-back ``code`` (``args``) of client session ``sid`` in ``sm``:
    its give-back, unless the session's record refuses it (:meth:`SessionPopped.refusal`)."""
    return sm.popped.refusal(sid, args) or sm.apply_plain(ops.CHECKED_GIVE_BACKS[code], args)


def _start_checking(sm: StateMachine, args: list[Any]) -> None:
    """The ``POPPED_CHECKING`` handler (``[]``): :meth:`SessionPopped.start_checking`."""
    sm.popped.start_checking()


#: The op starting the records' checking (their snapshot keys: :mod:`.session_popped_snapshot`).
FAMILY = Family("session_popped", {ops.POPPED_CHECKING: _start_checking})


def headers_by_id(table: Any) -> dict[Any, Any]:
    """A pop's or give-back's ``[[id, headers], ...]`` table as a dict (``{}``: none)."""
    if type(table) is not list:
        return {}
    return {entry[0]: entry[1] for entry in table
            if type(entry) is list and len(entry) == 2 and type(entry[0]) is int}


def elements(values: Any, runs: Any) -> list[tuple[int, int, Any]] | None:
    """``(id, stamp, value)`` of each element ``values`` and their id ``runs`` name, one
    for one (``None``: malformed)."""
    try:
        checked = ids.checked_runs(runs)
    except ValueError:
        return None
    if type(values) is not list or ids.covered(checked) != len(values):
        return None
    return [(i, stamp, value)
            for (i, stamp), value in zip(ids.expand(checked), values, strict=True)]


class Pop:
    """One applied pop of a session: its queue, its result, and its elements not given
    back (id -> position in the result's values)."""

    __slots__ = ("_headers", "_stamps", "left", "name", "result", "seq", "size")

    def __init__(self, seq: int, name: str, result: list[Any], left: dict[int, int],
                 size: int) -> None:
        self.seq, self.name, self.result, self.left, self.size = seq, name, result, left, size
        self._headers: dict[Any, Any] | None = None
        self._stamps: dict[int, int] | None = None

    def element(self, i: int) -> tuple[Any, Any]:
        """The value and headers element ``i`` was popped with."""
        if self._headers is None:
            self._headers = headers_by_id(self.result[2]) if len(self.result) == 3 else {}
        return self.result[0][self.left[i]], self._headers.get(i)

    def stamp(self, i: int) -> int:
        """The enqueue stamp element ``i`` was popped with."""
        if self._stamps is None:
            self._stamps = dict(ids.expand(self.result[1]))
        return self._stamps[i]


class SessionRecord:
    """One session's pops with elements not given back, oldest first."""

    __slots__ = ("bytes", "count", "index", "pops")

    def __init__(self) -> None:
        self.pops: OrderedDict[int, Pop] = OrderedDict()
        #: ``(queue, id)`` -> the seq of the pop holding it.
        self.index: dict[Key, int] = {}
        self.count = 0
        self.bytes = 0

    def find(self, name: str, i: int) -> Pop | None:
        """The pop that handed out element ``i`` of queue ``name``, if not given back."""
        seq = self.index.get((name, i))
        return None if seq is None else self.pops.get(seq)


class SessionPopped:
    """Each client session's popped elements not given back (module docstring)."""

    __slots__ = ("by_session", "bytes", "checking", "count")

    def __init__(self, checking: bool = False) -> None:
        self.by_session: dict[int, SessionRecord] = {}
        self.count = 0
        self.bytes = 0
        #: Whether checked give-backs are checked against the record (module docstring).
        self.checking = checking

    def refusal(self, sid: int, args: list[Any]) -> OpError | None:
        """Why the checked give-back ``args`` (``[name, values, runs, ...]``) of client
        session ``sid`` may not apply: an element it names is not held once as popped
        in the session and not given back (``None``: it applies; a malformed one is
        left to the give-back to refuse). Before :meth:`start_checking` it applies
        unchecked and starts checking (module docstring)."""
        if not self.checking:
            self.start_checking()
            return None
        found = elements(args[1], args[2]) if len(args) >= 3 and type(args[0]) is str else None
        if found is None:
            return None
        record = self.by_session.get(sid)
        index = {} if record is None else record.index
        name = args[0]
        named = {i for i, _, _ in found}
        if len(named) == len(found) and all((name, i) in index for i in named):
            return None
        return OpError(REFUSED, f"a give-back to queue {shown(name)} of elements its "
                       "session does not hold as popped and not given back (given back "
                       f"already, or not among its last {SESSION_ELEMENTS:,} popped); nothing was "
                       "given back: giving elements back more than once needs the produce "
                       "permission")

    def start_checking(self) -> None:
        """Check give-backs from here on, every record emptied first (already checking:
        nothing changes)."""
        if not self.checking:
            self.by_session.clear()
            self.count = self.bytes = 0
            self.checking = True

    def of(self, sid: int) -> SessionRecord | None:
        """Session ``sid``'s record (read it, never change it)."""
        return self.by_session.get(sid)

    def applied(self, sid: int, seq: int, code: int, args: list[Any], result: Any,
                size: int | None = None) -> None:
        """Op ``seq`` (``code``, ``args``) applied in client session ``sid`` with
        ``result`` (``size``: its bytes as the session's kept results count them, when
        they keep it): note what a pop handed out, or take off what a give-back
        returned."""
        if not args or type(args[0]) is not str:
            return
        if code in POPS:
            if type(result) is list and len(result) in (2, 3):
                self._popped(sid, seq, args[0], result, size)
            return
        record = self.by_session.get(sid)
        if result is not None or record is None or len(args) < 3:
            return
        name, index = args[0], record.index
        for i, _, _ in elements(args[1], args[2]) or ():
            if (name, i) in index:
                self._take(record, name, i)

    def _popped(self, sid: int, seq: int, name: str, result: list[Any],
                size: int | None) -> None:
        """What the applied pop ``seq`` handed out (``result``, as the state machine
        made it: runs covering its values one for one)."""
        if not result[0]:
            return
        if size is None:
            size = result_size(result, BYTES)
        if size > BYTES:
            return
        record = self.by_session.get(sid)
        if record is None:
            record = self.by_session[sid] = SessionRecord()
        index = record.index
        left: dict[int, int] = {}
        position = 0
        for first, count, _ in result[1]:
            for i in range(first, first + count):
                key = (name, i)
                held = index.get(key)
                if held == seq:  # a second copy (a producer gave it back twice): held once
                    position += 1
                    continue
                if held is not None:  # popped again (an earlier record was not cleared)
                    self._take(record, name, i)
                index[key] = seq
                left[i] = position
                position += 1
        record.pops[seq] = Pop(seq, name, result, left, size)
        record.count += len(left)
        record.bytes += size
        self.count += len(left)
        self.bytes += size
        while record.count > SESSION_ELEMENTS and record.pops:
            self._give_up(record)
        if self.count > ELEMENTS or self.bytes > BYTES:
            self._shed()

    def _take(self, record: SessionRecord, name: str, i: int) -> None:
        """Element ``i`` of queue ``name``, held by ``record``, is no longer held."""
        pop = record.pops[record.index.pop((name, i))]
        del pop.left[i]
        record.count -= 1
        self.count -= 1
        if not pop.left:
            self._gone(record, pop)

    def _gone(self, record: SessionRecord, pop: Pop) -> None:
        """``pop`` holds no element any longer."""
        del record.pops[pop.seq]
        record.bytes -= pop.size
        self.bytes -= pop.size

    def _give_up(self, record: SessionRecord) -> None:
        """Forget ``record``'s oldest pop."""
        self._forget(record, next(iter(record.pops.values())))

    def _forget(self, record: SessionRecord, pop: Pop) -> None:
        """Forget ``pop`` of ``record``."""
        for i in pop.left:
            del record.index[(pop.name, i)]
        record.count -= len(pop.left)
        self.count -= len(pop.left)
        pop.left = {}
        self._gone(record, pop)

    def _shed(self) -> None:
        """Give up the oldest pops of the sessions of the clients holding the largest
        share of either bound in all their sessions (each client's sessions holding the
        most bytes first), until all hold three quarters of each bound: a client's many
        sessions of small pops never push out another's one session of large ones."""
        count, size = ELEMENTS * 3 // 4, BYTES * 3 // 4
        held: dict[int, list[int]] = {}
        for sid, record in self.by_session.items():
            owner = held.setdefault(owner_of(sid), [0, 0])
            owner[0] += record.count
            owner[1] += record.bytes

        def turn(sid: int) -> tuple[int, int, int]:
            owner = owner_of(sid)
            popped, popped_bytes = held[owner]  # shares compared as ratios to the bounds
            return (-max(popped * BYTES, popped_bytes * ELEMENTS), owner,
                    -self.by_session[sid].bytes)

        for sid in sorted(self.by_session, key=turn):
            record = self.by_session[sid]
            while record.pops and (self.count > count or self.bytes > size):
                self._give_up(record)
            if not record.pops:
                del self.by_session[sid]
            if self.count <= count and self.bytes <= size:
                return

    def restored(self, sid: int, pops: list[Pop]) -> None:
        """Hold ``pops`` (oldest first, each with its elements not given back) as session
        ``sid``'s record (it holds none), as a snapshot lists them, within the
        session's bound; raises ``ValueError`` when two of them share a seq or hold
        one element."""
        record = self.by_session[sid] = SessionRecord()
        index = record.index
        for pop in pops:
            if pop.seq in record.pops:
                raise ValueError(f"session {sid:x} lists its op {pop.seq} twice")
            for i in pop.left:
                if (pop.name, i) in index:
                    raise ValueError(f"session {sid:x} holds element {i} of queue "
                                     f"{pop.name!r} twice")
                index[(pop.name, i)] = pop.seq
            record.pops[pop.seq] = pop
            record.count += len(pop.left)
            record.bytes += pop.size
        self.count += record.count
        self.bytes += record.bytes
        while record.count > SESSION_ELEMENTS and record.pops:
            self._give_up(record)

    def bound(self) -> None:
        """Hold all sessions' records within the bounds (after :meth:`restored`)."""
        if self.count > ELEMENTS or self.bytes > BYTES:
            self._shed()

    def deleted(self, name: str) -> None:
        """Queue ``name`` was deleted: what the sessions popped from it can no longer be
        given back (a queue declared again under its name hands out its ids again)."""
        for sid, record in list(self.by_session.items()):
            gone = [pop for pop in record.pops.values() if pop.name == name]
            for pop in gone:
                self._forget(record, pop)
            if gone and not record.pops:
                del self.by_session[sid]

    def dropped(self, sid: int) -> None:
        """Client session ``sid`` was dropped or ended."""
        record = self.by_session.pop(sid, None)
        if record is not None:
            self.count -= record.count
            self.bytes -= record.bytes
