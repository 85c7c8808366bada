"""What a client without the produce permission popped, so that it gives back only that.

Giving popped elements back to the head (``QUEUE_UNPOP_STAMPED``,
``QUEUE_UNPOP_HEADERS``: a prefetch's rest, a pop whose caller went away) puts values in
a queue past its capacity. A client that may push may do so; one that may only consume
may give back an element only under the id it was popped under, with the value and
headers it was popped with, over the link that answered the pop, and only among
its last :data:`MAX_KEPT` popped elements. Anything else is refused before it is
proposed. The older ``QUEUE_UNPOP(_MANY)`` (values without ids) are not open to such a
client at all.

What a pop hands out is taken from the answer to that very request (the member passes
the request along with its answer, whatever id the client gave it), and only when its
sequence number is the pop's own: a session answers a sequence number used before with
the first op's result, so a pop sent under the number of an earlier op (another queue's
pop, say) would otherwise be taken as popped from this queue. A pop whose number this
member read for another op of the session (:class:`SeqReads`), or whose session had
applied it when it was read, is answered but gives nothing back.

A give-back is checked against the popped elements of the link it arrives on: a retry
of one whose earlier attempt applied (which took them off that attempt's link) is
proposed all the same and answered from the session, when the member holds it as
applied. One refused while an earlier attempt's answer was lost is reported by the
client with its outcome unknown (:func:`retry_refused`): that attempt may yet apply.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import cbor2

from ..core import ids
from ..errors import OperationFailed
from ..replicated import ops as C

#: Popped elements remembered per client link.
MAX_KEPT = 4096
#: Sequence numbers of client ops a member remembers having read (all clients).
SEQS_KEPT = 16384
POPS = frozenset({C.QUEUE_POP_STAMPED, C.QUEUE_POP_HEADERS})
GIVE_BACKS = frozenset({C.QUEUE_UNPOP_STAMPED, C.QUEUE_UNPOP_HEADERS})
#: The ops :class:`Popped` follows.
FOLLOWED = POPS | GIVE_BACKS


def _digest(value: Any, headers: Any) -> bytes:
    try:
        data = cbor2.dumps([value, headers], canonical=True)
    except (cbor2.CBOREncodeError, TypeError, ValueError):
        return b""
    return hashlib.blake2b(data, digest_size=16).digest()


def _headers_by_id(table: Any) -> dict[Any, Any]:
    if type(table) is not list:
        return {}
    return {entry[0]: entry[1] for entry in table
            if type(entry) is list and len(entry) == 2 and type(entry[0]) is int}


class SeqReads:
    """The ``(session, seq)`` of the client ops one member read lately, each with a flag
    that stays up while no other op it read carried the same pair."""

    def __init__(self, limit: int = SEQS_KEPT) -> None:
        self._limit = limit
        self._read: OrderedDict[tuple[int, int], list[bool]] = OrderedDict()

    def note(self, session: int, seq: int) -> list[bool]:
        """Op ``seq`` of ``session`` was read: its flag (``[True]`` while the pair is
        its own; lowered when another op carries it, or once it is forgotten)."""
        key = (session, seq)
        earlier = self._read.get(key)
        if earlier is not None:
            earlier[0] = False
            return [False]
        flag = self._read[key] = [True]
        if len(self._read) > self._limit:
            self._read.popitem(last=False)[1][0] = False
        return flag


#: What a pop's answer is taken as: the queue it popped, and its :class:`SeqReads` flag.
Pop = tuple[str, list[bool]]


class Popped:
    """One client link's popped elements (``(queue, id)`` -> digest of value and headers)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, int], bytes] = OrderedDict()

    def answered(self, pop: Pop, result: Any) -> None:
        """The pop ``pop`` was answered with ``result``: remember what it handed out,
        unless its sequence number was not its own alone."""
        name, own = pop
        if not own[0] or type(result) is not list or len(result) not in (2, 3):
            return
        values, runs = result[0], result[1]
        headers = _headers_by_id(result[2]) if len(result) == 3 else {}
        try:
            expanded = ids.expand(ids.checked_runs(runs))
        except ValueError:
            return
        for (i, _), value in zip(expanded, values, strict=False):
            key = (name, i)
            self._kept[key] = _digest(value, headers.get(i))
            self._kept.move_to_end(key)
        while len(self._kept) > MAX_KEPT:
            self._kept.popitem(last=False)

    def give_back_refusal(self, code: int, args: list[Any], client: str) -> str | None:
        """Why this client may not give back what ``args`` names (``None``: it may; the
        elements are then forgotten until popped again)."""
        name, values, runs = args[0], args[1], args[2]
        refusal = (f"client {client!r} may give back to queue {name!r} only elements it "
                   "popped through this member, with the values and headers they were "
                   f"popped with (among its last {MAX_KEPT:,}); giving other values to "
                   "the head needs the produce permission")
        try:
            checked = ids.checked_runs(runs)
        except ValueError:
            return None  # malformed: the state machine refuses it, naming why
        if type(values) is not list or ids.covered(checked) != len(values):
            return None
        headers = _headers_by_id(args[3]) if code == C.QUEUE_UNPOP_HEADERS else {}
        keys: list[tuple[str, int]] = []
        for (i, _), value in zip(ids.expand(checked), values, strict=True):
            key = (name, i)
            kept = self._kept.get(key)
            if kept is None or kept == b"" or kept != _digest(value, headers.get(i)):
                return refusal
            keys.append(key)
        if len(set(keys)) != len(keys):
            return refusal
        for key in keys:
            del self._kept[key]
        return None


def retry_refused(error: Exception) -> OperationFailed:
    """The client's error for a give-back refused as not popped through the link its
    retry went on, an earlier attempt's answer lost: its outcome is unknown."""
    failed = OperationFailed(
        f"{error}; it was sent before, through a link whose answer was lost: its outcome "
        "is unknown (that attempt may have given the elements back; read the queue to "
        "learn whether it did)", applied=None)
    failed.__cause__ = error
    return failed
