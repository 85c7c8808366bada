"""Client sessions by owner: a client session id carries a tag of the client's name, and
when the state machine's table of client sessions is full, the client holding the most
sessions gives up its least recently seen one.

So a client opening sessions without end only ever drops its own: another client's
session, and the results it keeps for retries, stays. Members serving clients refuse a
session id whose tag is not its client's (:func:`owner_tag`).

A client session id is ``CLIENT_SESSION_BASE + (tag << OWNER_SHIFT) + r`` with ``tag``
the 16-bit :func:`owner_tag` of the client's name and ``0 < r < 2**OWNER_SHIFT``.
"""

from __future__ import annotations

import secrets
import zlib
from collections import OrderedDict
from collections.abc import Iterable

#: Client session ids are above this (a member's are at most this).
CLIENT_SESSION_BASE = 2**62
#: The owner tag's position and width in a client session id.
OWNER_SHIFT = 46
OWNER_MASK = 0xFFFF


def owner_tag(name: str) -> int:
    """The 16-bit tag of client ``name`` that its session ids carry."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) & OWNER_MASK


def owner_of(sid: int) -> int:
    """The owner tag a client session id carries."""
    return (sid >> OWNER_SHIFT) & OWNER_MASK


def new_session_id(name: str) -> int:
    """A fresh random session id for client ``name``."""
    return (CLIENT_SESSION_BASE + (owner_tag(name) << OWNER_SHIFT)
            + 1 + secrets.randbelow(2**OWNER_SHIFT - 1))


class ClientSessions:
    """How many client sessions each owner holds in a table kept oldest-seen first.

    ``order`` holds each owner's sessions in the table's order (the caller reports a
    session seen, moved to the table's end, with :meth:`seen`), so an owner holds as
    many as its entry lists (:meth:`held`); ``most`` is the most any one owner holds
    (what :meth:`victim` looks for), kept as sessions open and drop: ``holding`` maps a
    count to the owners holding that many."""

    __slots__ = ("holding", "most", "order", "total")

    def __init__(self) -> None:
        self.holding: dict[int, set[int]] = {}
        self.order: dict[int, OrderedDict[int, None]] = {}
        self.most = 0
        self.total = 0

    def held(self, owner: int) -> int:
        """How many client sessions ``owner`` holds."""
        order = self.order.get(owner)
        return 0 if order is None else len(order)

    def opened(self, sid: int) -> None:
        owner = owner_of(sid)
        order = self.order.setdefault(owner, OrderedDict())
        held = len(order)
        order[sid] = None
        if held:
            self._left(held, owner)
        self.holding.setdefault(held + 1, set()).add(owner)
        if held == self.most:
            self.most = held + 1
        self.total += 1

    def dropped(self, sid: int) -> None:
        owner = owner_of(sid)
        order = self.order[owner]
        held = len(order)
        left = held - 1
        del order[sid]
        if left:
            self.holding.setdefault(left, set()).add(owner)
        else:
            del self.order[owner]
        self._left(held, owner)
        if held == self.most and held not in self.holding:
            self.most = left
        self.total -= 1

    def seen(self, sid: int) -> None:
        """Session ``sid`` moved to the table's end (an op of it applied); a member's
        session is not counted."""
        if sid > CLIENT_SESSION_BASE:
            self.order[owner_of(sid)].move_to_end(sid)

    def _left(self, held: int, owner: int) -> None:
        """``owner`` no longer holds ``held`` sessions."""
        owners = self.holding[held]
        owners.discard(owner)
        if not owners:
            del self.holding[held]

    def rebuild(self, sids: Iterable[int]) -> None:
        """Count again from a table's session ids, oldest seen first (after a snapshot
        was installed)."""
        self.holding.clear()
        self.order.clear()
        self.most = 0
        self.total = 0
        for sid in sids:
            if sid > CLIENT_SESSION_BASE:
                self.opened(sid)

    def victim(self, sids: Iterable[int]) -> int:
        """The session to drop for a new one: the least recently seen of the owner
        holding the most (``sids`` oldest-seen first; ties go to the owner whose session
        was seen least recently)."""
        most = self.most
        top = self.holding.get(most, ())
        if len(top) == 1:  # one owner holds the most: its least recently seen
            for owner in top:
                return next(iter(self.order[owner]))
        for sid in sids:  # owners tied: the first of theirs in the table
            if sid > CLIENT_SESSION_BASE and self.held(owner_of(sid)) == most:
                return sid
        raise LookupError("no client session to drop")
