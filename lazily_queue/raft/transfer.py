"""A leadership transfer that proposals cannot outrun (the ``paused-transfer`` patch).

PySyncObj sends ``timeout_now`` only when the target's match index equals the leader's
last index at the moment of the request, and the leader goes on appending afterwards.
Under steady writes the request is refused again and again, and when it is sent the
target starts its election behind the leader and the other follower, which refuse
their votes: leadership stays, or lands elsewhere after another election.

Here, as in etcd, a transfer pauses proposals on the leader: new ones are held (and
commands forwarded by followers wait in the queue) while the target catches up, and
``timeout_now`` goes once its match index equals the last index. The pause ends when
this member is no longer the leader (the held proposals are then proposed again, so a
follower forwards them to the new leader) or after ``patience`` seconds (about an
election timeout), when the transfer is given up and they are appended here; another
transfer is then refused for ``patience`` seconds, so that retries leave room for
writes. A target that is not linked is refused at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .outcome import Answer, Outcome, from_pysyncobj


class LeadershipTransfer:
    """The transfer in progress on one engine, and the proposals it holds."""

    def __init__(self, engine: Any, clock: Callable[[], float], patience: float) -> None:
        self._engine = engine
        self._clock = clock
        self.patience = patience
        self.target: Any = None
        self._callback: Answer | None = None
        self._deadline = 0.0
        self._sent = False
        self._resting_until = float("-inf")
        self.held: list[tuple[bytes, Any]] = []
        #: Transfers given up because the target did not catch up or win in time.
        self.abandoned = 0

    @property
    def pending(self) -> bool:
        return self.target is not None

    def start(self, target: Any, callback: Answer) -> None:
        """Pause proposals until ``target`` (None: the most caught-up connected follower)
        holds the whole log, then send it ``timeout_now``; ``callback`` answers success
        once it is sent."""
        e = self._engine
        if not e._isLeader():
            callback(None, Outcome.NOT_LEADER)
            return
        if target is None:
            candidates = [(e._SyncObj__raftMatchIndex.get(n, 0), n.id, n)
                          for n in e._SyncObj__otherNodes if n in e._SyncObj__connectedNodes]
            target = max(candidates)[2] if candidates else None
        if (target is None or target == e._SyncObj__selfNode or self.pending
                or target not in e._SyncObj__otherNodes
                or target not in e._SyncObj__connectedNodes
                or self._clock() < self._resting_until):
            callback(None, Outcome.REQUEST_DENIED)
            return
        self.target, self._callback = target, callback
        self._deadline = self._clock() + self.patience
        self._sent = False
        self.advance()

    def advance(self) -> list[tuple[bytes, Any]]:
        """Send ``timeout_now`` once the target caught up; end the pause when leadership
        moved or patience ran out. Returns the proposals to propose again (then)."""
        if not self.pending:
            return []
        e = self._engine
        if e._isLeader() and self._clock() <= self._deadline:
            if not self._sent and (e._SyncObj__raftMatchIndex.get(self.target, 0)
                                   == e._SyncObj__getCurrentLogIndex()):
                self._sent = True
                e.transferLeadership(self.target, _library_callback(self._answer()))
            return []
        if e._isLeader():
            self.abandoned += 1
            self._resting_until = self._clock() + self.patience  # writes flow before a retry
        answer = self._answer()
        if answer is not None and not self._sent:
            answer(None, Outcome.REQUEST_DENIED if e._isLeader() else Outcome.NOT_LEADER)
        self.target = None
        held, self.held = self.held, []
        return held

    def _answer(self) -> Answer | None:
        callback, self._callback = self._callback, None
        return callback


def _library_callback(answer: Answer | None) -> Callable[[Any, int], None] | None:
    """``answer`` as the library calls it (with its own failure code)."""
    if answer is None:
        return None
    return lambda result, reason: answer(result, from_pysyncobj(reason))
