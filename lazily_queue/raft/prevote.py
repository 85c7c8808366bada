"""Pre-vote (Raft thesis §9.6): a member asks whether it could win before it raises its term.

PySyncObj starts an election, raising its term, whenever its election deadline passes
and it is connected to anyone. A member that cannot win (cut off from the majority, or
with a stale log) raises its term on every timeout, and when it reconnects its higher
term deposes a healthy leader. With the ``pre-vote`` engine patch a passed deadline
starts a *round* instead:

- the member sends ``pre_vote`` {term: its term + 1, last log index and term} to every
  other member and keeps its term and vote;
- a member grants it, changing neither its term nor its vote, only when that term is
  above its own, the candidate's log is at least as up to date as its own and it has
  not heard from a live leader within the minimum election timeout (a leader never
  grants). A grant echoes the round's term; a refusal carries the refuser's term;
- with a majority of grants (itself included) the member runs PySyncObj's own election
  (term + 1, ``request_vote``) in its next tick. Grants of another round or term are
  ignored and each member counts once per round;
- a refusal carrying a higher term is adopted (the member falls back to follower), as
  is the answer a member gives an AppendEntries of a lower term: a member that holds a
  higher term (from before an upgrade, or from an election nobody else heard of) cannot
  win a round against a live leader, so that leader steps down instead of leaving the
  member out forever.

A leadership transfer (``timeout_now`` from the current leader) skips the round, and a
one-member cluster elects itself at once, without waiting for an election timeout
(unless it rejoins: then never, see :mod:`.rejoin`). The rejoining member's
restrictions are applied by :meth:`RaftEngine.deliver` before a message reaches this
module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import patches

FOLLOWER, CANDIDATE, LEADER = 0, 1, 2
PATCH = "pre-vote"


class PreVote:
    """The pre-vote rounds of one :class:`~lazily_queue.raft.engine.RaftEngine`."""

    def __init__(self, engine: Any, clock: Callable[[], float], min_timeout: float) -> None:
        self._engine = engine
        self._clock = clock
        self._min_timeout = min_timeout
        self._round: int | None = None  # the term the open round asks for
        self._grants: set[str] = set()
        self._won: int | None = None  # a won round's term; its election runs next tick
        self._heard_at: float | None = None
        self.rounds = 0
        self.transfer_elections = 0

    # -- the member's own rounds ---------------------------------------------------------------

    def before_tick(self) -> None:
        """Turn an election the coming tick would start into a round, unless a won round,
        a leadership transfer or a one-member cluster lets it run."""
        e = self._engine
        won, self._won = self._won, None
        if not patches.enabled(PATCH) or e._SyncObj__raftState == LEADER:
            return
        now = self._clock()
        if not e._SyncObj__otherNodes:
            # A cluster of one: nobody else votes or leads, so it elects itself at once
            # rather than after an election timeout (the members in its log are in
            # effect from the start, see log_config). Not while it rejoins: wiped, it
            # knows no member to catch up from, and alone it would lead on an empty log.
            e._SyncObj__raftElectionDeadline = (
                now + e._SyncObj__generateRaftTimeout() if e.rejoining else float("-inf"))
            return
        if e._SyncObj__raftElectionDeadline >= now or not e._SyncObj__connectedToAnyone():
            return
        term = int(e._SyncObj__raftCurrentTerm)
        if won == term + 1:
            return
        if e._SyncObj__transferInProgress:
            self.transfer_elections += 1
            return
        e._SyncObj__raftElectionDeadline = now + e._SyncObj__generateRaftTimeout()
        self.rounds += 1
        self._round = term + 1
        self._grants = {str(e._SyncObj__selfNode.id)}
        last = e._SyncObj__raftLog[-1]
        for node in sorted(e._SyncObj__otherNodes, key=lambda n: str(n.id)):
            e._SyncObj__transport.send(node, {
                "type": "pre_vote", "term": term + 1,
                "last_log_index": int(last[1]), "last_log_term": int(last[2]),
            })

    def quiet(self, now: float) -> bool:
        """Whether a tick at ``now`` has no election business for this follower: no round
        won, other members, and an election deadline not passed (neither
        :meth:`before_tick` nor the library's election check would act)."""
        e = self._engine
        return (self._won is None and e._SyncObj__raftState == FOLLOWER
                and bool(e._SyncObj__otherNodes) and e._SyncObj__raftElectionDeadline >= now)

    def on_response(self, peer_id: str, message: dict[str, Any]) -> None:
        """Count a grant of the open round; adopt the higher term a refusal carries."""
        e = self._engine
        term = int(e._SyncObj__raftCurrentTerm)
        if not message["granted"]:
            self._adopt(int(message["term"]))
            return
        if (self._round is None or message["term"] != self._round or self._round != term + 1
                or e._SyncObj__raftState == LEADER):
            return
        self._grants.add(peer_id)
        if len(self._grants) > (len(e._SyncObj__otherNodes) + 1) / 2:
            self._round = None
            self._won = term + 1
            e._SyncObj__raftElectionDeadline = float("-inf")

    def _adopt(self, term: int) -> None:
        e = self._engine
        if term <= e._SyncObj__raftCurrentTerm:
            return
        self._round = self._won = None
        e._SyncObj__setCurrentTerm(term, None)
        e._SyncObj__raftLeader = None
        e._SyncObj__setState(FOLLOWER)

    # -- answering others --------------------------------------------------------------------

    def on_request(self, node: Any, message: dict[str, Any]) -> None:
        """Answer a ``pre_vote`` without touching this member's term or vote."""
        e = self._engine
        term = int(e._SyncObj__raftCurrentTerm)
        last = e._SyncObj__raftLog[-1]
        grant = (
            message["term"] > term
            and (message["last_log_term"], message["last_log_index"]) >= (last[2], last[1])
            and not self._leader_alive()
        )
        e._SyncObj__transport.send(node, {
            "type": "pre_vote_response", "term": message["term"] if grant else term,
            "granted": grant,
        })

    def on_append_entries(self, node: Any, message: dict[str, Any]) -> None:
        """Note a live leader (its round is moot), or tell a leader of a lower term ours."""
        e = self._engine
        term = int(e._SyncObj__raftCurrentTerm)
        if message["term"] >= term:
            self._heard_at = self._clock()
            self._round = self._won = None
        elif patches.enabled(PATCH):
            e._SyncObj__transport.send(
                node, {"type": "pre_vote_response", "term": term, "granted": False}
            )

    def heard_within(self, seconds: float) -> bool:
        """Whether a leader's AppendEntries arrived within the last ``seconds``."""
        return self._heard_at is not None and self._clock() - self._heard_at <= seconds

    def _leader_alive(self) -> bool:
        e = self._engine
        if e._SyncObj__raftState == LEADER:
            return True
        return (
            e._SyncObj__raftLeader is not None
            and self._heard_at is not None
            and self._clock() - self._heard_at < self._min_timeout
        )
