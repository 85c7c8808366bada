"""A client session's takes answered ``no_room``: a mixin of :class:`~.session.Session`.

To a member announcing :data:`~.protocol.TAKE_ROOM_FEATURE` every op goes in the sized
form (its floor negated): the cluster holds a take or claim (``pop_many``,
``claim_many``, an iterator's prefetch) to the room its session's kept results leave, so
it never gives up the result of an earlier take still unanswered (a take or claim goes
only once its link's member answered the hello: :meth:`.link_fit.LinkFit._sizable`).
One for which that room holds not even one element took nothing and is answered
``no_room`` (:mod:`..replicated.take_bytes`): it goes again, under the next sequence
number, once it is the session's oldest unanswered op (so its floor lets go of every
earlier result), never sooner: each resend waits for an answer to another op, or finds
the room whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..replicated.ops import OpError
from ..replicated.take_bytes import NO_ROOM
from .link import Link

if TYPE_CHECKING:
    from .session import _Op


def no_room(result: Any) -> bool:
    """Whether ``result`` says a take took nothing for want of room."""
    return type(result) is OpError and result.code == NO_ROOM.code


class TakeRoom:
    """Sends again the ops answered ``no_room`` (module docstring)."""

    _ops: dict[int, _Op]
    _next_seq: int
    _link: Callable[[], Link | None]
    #: Ops answered ``no_room`` not yet answered otherwise.
    _roomless = 0

    def _floor(self) -> int:
        raise NotImplementedError

    def _send(self, link: Link, op: _Op) -> None:
        raise NotImplementedError

    def _no_room(self, op: _Op) -> None:
        """``op`` was answered ``no_room``: nothing was taken, and it waits under the
        next sequence number to go again."""
        del self._ops[op.seq]
        op.seq = self._next_seq
        self._next_seq += 1
        self._ops[op.seq] = op
        op.rid, op.unknown, op.error, op.attempts = 0, False, None, 0  # none took a thing
        if not op.roomless:
            op.roomless = True
            self._roomless += 1
        self._send_roomless()

    def _roomless_done(self, op: _Op) -> None:
        """``op`` was answered (or failed): the op waiting for room that is now the
        oldest unanswered goes."""
        if op.roomless:
            self._roomless -= 1
        if self._roomless:
            self._send_roomless()

    def _send_roomless(self) -> None:
        link = self._link()
        op = self._ops.get(self._floor())
        if link is not None and op is not None and op.roomless and op.rid == 0:
            self._send(link, op)
