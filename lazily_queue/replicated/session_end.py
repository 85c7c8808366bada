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
end (as long as an idle session is), and at most :data:`ENDED_KEPT` are kept (the
oldest ended go first); past either, the id is forgotten like an expired session.
Snapshot section ``ended_sessions`` (``[[session, ended_ms], ...]`` oldest ended
first, left out while there is none).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..errors import shown
from . import ops
from .client_sessions import CLIENT_SESSION_BASE
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
    ended first."""

    __slots__ = ("ended",)

    def __init__(self) -> None:
        self.ended: OrderedDict[int, int] = OrderedDict()

    def __contains__(self, sid: object) -> bool:
        return sid in self.ended

    def __len__(self) -> int:
        return len(self.ended)

    def add(self, sid: int, now: int) -> None:
        ended = self.ended
        ended[sid] = now
        ended.move_to_end(sid)
        while len(ended) > ENDED_KEPT:
            ended.popitem(last=False)

    def expire(self, horizon: int) -> None:
        """Forget the ids ended before ``horizon`` (ms)."""
        ended = self.ended
        while ended:
            sid, stamp = next(iter(ended.items()))
            if stamp >= horizon:
                return
            del ended[sid]


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
