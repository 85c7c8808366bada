"""The safety properties the simulated cluster checks after every member's step:
election safety, and acknowledged = fsynced on a majority (when a leader's commit index
moves, and for the highest committed entry at every step after that)."""

from __future__ import annotations

from lazily_queue.raft.replica import Replica

from .history import History
from .node import SimNode


class SafetyChecks:
    """Checks of :class:`~.cluster.Cluster` (which sets up what is declared here)."""

    nodes: dict[str, SimNode]
    history: History
    leaders: dict[int, str]
    _commits: dict[tuple[str, int], int]
    _kept: tuple[int, int, tuple[str, ...]] | None

    def trace(self, line: str) -> None:
        raise NotImplementedError

    def _check_leader(self, n: str) -> None:
        replica = self.nodes[n].replica
        if replica is None or not replica.engine.is_leader:
            return
        term = replica.engine.term
        other = self.leaders.get(term)
        if other is None:
            self.leaders[term] = n
            self.trace(f"{n}: leader of term {term}")
        elif other != n:
            self.history.fail(f"election safety: {other} and {n} both lead term {term}")
        self._check_commit(n, replica)

    def _check_commit(self, n: str, replica: Replica) -> None:
        """Acknowledged = fsynced on a majority: whenever a leader's commit index moves,
        a majority of the members' journals hold that entry durably right now."""
        commit = replica.engine.commit_index
        key = (n, replica.engine.term)
        seen = self._commits.setdefault(key, commit)  # learnt as a follower: not its own
        if commit <= seen:
            return
        self._commits[key] = commit
        term = replica.journal.term_at(commit)
        if term is None:
            return  # below this leader's own snapshot: committed long ago
        holders = [m for m, node in self.nodes.items() if node.holds(commit, term)]
        if len(holders) * 2 <= len(replica.engine.members):
            self.history.fail(
                f"{n} committed index {commit} (term {term}) while only {holders} of "
                f"{replica.engine.members} held it durably")
        if self._kept is None or commit > self._kept[0]:
            self._kept = (commit, term, tuple(sorted(replica.engine.members)))

    def _check_kept(self) -> None:
        """Committed stays committed: the highest entry a leader committed stays durable
        on a majority of the members it was committed by (a member a fault took durable
        data from is excused until it holds it again; the check pauses while the
        membership changes)."""
        if self._kept is None:
            return
        index, term, members = self._kept
        for running in self.nodes.values():
            if (running.replica is not None
                    and tuple(sorted(running.replica.engine.members)) != members):
                return  # a change not yet seen by every running member
        excused = 0
        holders = []
        for m in members:
            member = self.nodes.get(m)
            if member is None:
                continue
            if member.lost_data and member.replica is not None and member.holds(index, term):
                member.lost_data = False  # caught up since (while down, its disk is unread)
            if member.lost_data:
                excused += 1
            elif member.holds(index, term):
                holders.append(m)
        if (len(holders) + excused) * 2 <= len(members):
            self.history.fail(
                f"committed index {index} (term {term}) is now held durably only by "
                f"{holders} of {list(members)}")
