"""Ended client sessions: a client closing cleanly ends its session, so the table of
sessions does not hold it (and its kept results) until it goes idle for an hour.

- ``SESSION_END`` ``[]``, applied as a client's op (``CLIENT_OP`` / ``CLIENT_OPS``) in
  its session: drops the session, the results it keeps and the ephemeral subscriptions
  it owns, and notes the session id as ended. Answers ``None``, and so does a retry of
  it. Proposed outside a client session it is refused (``session_end_outside_session``).
- Any later op under an ended session id is refused with :data:`ENDED` and not applied:
  a retry of an op applied before the end (say, still in flight through another
  member) is never applied a second time in a fresh session.

An ended id is kept for :data:`~.state_machine.SESSION_TTL_MS` of leader time after its
end (as long as an idle session is), and at most :data:`ENDED_KEPT` are kept: past the
bound, the client holding the most ended ids gives up its oldest (ties: the one whose
oldest ended first, then the lower id), so a client ending sessions without end only
ever pushes out its own. Past either, the id is forgotten like an expired session.
Snapshot section ``ended_sessions`` (``[[session, ended_ms], ...]`` oldest ended
first, left out while there is none).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..errors import shown
from . import ops
from .client_sessions import CLIENT_SESSION_BASE, owner_of
from .family import Family, Section
from .ops import OpError, OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Ended session ids kept at most (16 bytes each in a snapshot).
ENDED_KEPT = 65536

#: The answer to an op under an ended session.
ENDED = OpError("session_ended", "this client session was ended (its client closed); the "
                "op was not applied: a client that closed connects again for a new session")


class EndedSessions:
    """The ids of the client sessions ended lately, with the stamp each ended at, oldest
    ended first; ``by_owner`` holds each client's (by owner tag), oldest ended first, and
    ``holding`` the owners by how many ids they hold (``most`` the most one holds)."""

    __slots__ = ("by_owner", "ended", "holding", "most")

    def __init__(self) -> None:
        self.ended: OrderedDict[int, int] = OrderedDict()
        self.by_owner: dict[int, OrderedDict[int, None]] = {}
        self.holding: dict[int, set[int]] = {}
        self.most = 0

    def __contains__(self, sid: object) -> bool:
        return sid in self.ended

    def __len__(self) -> int:
        return len(self.ended)

    def add(self, sid: int, now: int) -> None:
        ended = self.ended
        owner = owner_of(sid)
        held = self.by_owner.get(owner)
        if held is None:
            held = self.by_owner[owner] = OrderedDict()
        if sid in ended:
            held.move_to_end(sid)
        else:
            held[sid] = None
            self._counted(owner, len(held) - 1, len(held))
        ended[sid] = now
        ended.move_to_end(sid)
        while len(ended) > ENDED_KEPT:
            self._forget_oldest(self._most_holding())

    def _counted(self, owner: int, was: int, now: int) -> None:
        """``owner`` holds ``now`` ended ids, not ``was``."""
        holding = self.holding
        if was:
            owners = holding[was]
            owners.discard(owner)
            if not owners:
                del holding[was]
                if was == self.most:
                    self.most = now
        if now:
            holding.setdefault(now, set()).add(owner)
            self.most = max(self.most, now)

    def _most_holding(self) -> int:
        """The owner holding the most ended ids (ties: the one whose oldest ended first,
        then the one with the lower id)."""
        top = self.holding[self.most]
        if len(top) == 1:
            return next(iter(top))
        ended, by_owner = self.ended, self.by_owner
        return min(top, key=lambda owner: (ended[next(iter(by_owner[owner]))],
                                           next(iter(by_owner[owner]))))

    def _forget_oldest(self, owner: int) -> None:
        """Forget ``owner``'s oldest ended id."""
        held = self.by_owner[owner]
        del self.ended[held.popitem(last=False)[0]]
        self._counted(owner, len(held) + 1, len(held))
        if not held:
            del self.by_owner[owner]

    def expire(self, horizon: int) -> None:
        """Forget the ids ended before ``horizon`` (ms)."""
        ended = self.ended
        while ended:
            sid, stamp = next(iter(ended.items()))
            if stamp >= horizon:
                return
            self._forget_oldest(owner_of(sid))  # the oldest of all is its owner's oldest


def _outside(sm: StateMachine, args: list[Any]) -> Any:
    raise OpRefused("session_end_outside_session", "session_end ends the client session it "
                    "is applied in: a client proposes it as its op, not a member")


def _capture(sm: StateMachine) -> list[Any] | None:
    return [[sid, stamp] for sid, stamp in sm.ended.ended.items()] or None


def _restore(sm: StateMachine, doc: Any) -> None:
    ended = EndedSessions()
    if doc is not None:
        if not isinstance(doc, list):
            raise ValueError("snapshot section 'ended_sessions' must be a list of "
                             "[session, ended_ms]")
        for item in doc:
            if (type(item) is not list or len(item) != 2 or type(item[0]) is not int
                    or item[0] <= CLIENT_SESSION_BASE or type(item[1]) is not int):
                raise ValueError(f"snapshot section 'ended_sessions': {shown(item)} is not "
                                 "[client session id, ended_ms]")
            ended.add(item[0], item[1])
    sm.ended = ended


FAMILY = Family(
    "session_end",
    {ops.SESSION_END: _outside},
    (Section("ended_sessions", _capture, _restore),),
)
