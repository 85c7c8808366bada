"""Leader stability: no member starts an election against a leader a majority follows.

A member that cannot win an election (cut off from the majority by a partition or a
one-way cut, or holding a stale log) must not raise the cluster's term: when it comes
back, its higher term would depose a healthy leader. Pre-vote prevents it, and this
property checks it under every fault the schedule runs at the same time.

When a member starts an election (it becomes a candidate of a higher term), no running
leader of a lower term may hold a *stable majority*: the leader has led its term for
the last :data:`WINDOW` seconds, and members of its configuration (the leader included)
form a majority that ran unpaused over that window with the links between them and the
leader passing both ways, and that still follow it in its term. Each of them heard the
leader within the minimum election timeout, so none grants a pre-vote, and any
majority of grants includes one of them. Elections started by a leadership transfer
skip pre-vote by design and are exempt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lazily_queue.raft.engine import CANDIDATE

if TYPE_CHECKING:
    from .cluster import Cluster

#: The minimum election timeout (0.3 s) plus a heartbeat period, the largest link
#: latency and a tick: long enough that a majority reached both ways has heard the leader.
WINDOW = 0.5


class LeaderStability:
    """Tracks who runs and which links pass, and checks each election as it starts."""

    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        self._running_since: dict[str, float] = {}
        self._linked_since: dict[frozenset[str], float] = {}
        self._seen: dict[str, tuple[int, int]] = {}  # term, transfer elections
        self._leading_since: dict[tuple[str, int], float] = {}

    def sample(self) -> None:
        """Record which members run unpaused (and not stalled on their disk) and which
        links pass (called on each change of either)."""
        c, now = self.c, self.c.clock.now
        for n in c.node_ids:
            if c.nodes[n].running and not c.is_paused(n) and not c.nodes[n].stalled:
                self._running_since.setdefault(n, now)
            else:
                self._running_since.pop(n, None)
        for i, a in enumerate(c.node_ids):
            for b in c.node_ids[i + 1 :]:
                key = frozenset((a, b))
                if c.network.two_way(a, b):
                    self._linked_since.setdefault(key, now)
                else:
                    self._linked_since.pop(key, None)

    def stepped(self, n: str) -> None:
        """Check the election ``n`` may have started in the step it just took."""
        replica = self.c.nodes[n].replica
        if replica is None:
            return
        engine = replica.engine
        if engine.is_leader:
            self._leading_since.setdefault((n, engine.term), self.c.clock.now)
        seen = (engine.term, engine.pre_vote.transfer_elections)
        before = self._seen.get(n)
        self._seen[n] = seen
        if before is None or seen[0] <= before[0] or engine.state != CANDIDATE:
            return
        if seen[1] != before[1]:
            return
        for leader, node in self.c.nodes.items():
            other = node.replica
            if other is None or not other.engine.is_leader or other.engine.term >= seen[0]:
                continue
            majority = self._stable_majority(leader, other.engine.term, other.engine.members)
            if majority:
                self.c.history.fail(
                    f"leader stability: {n} started an election for term {seen[0]} while "
                    f"{leader} led term {other.engine.term} with {majority} following it "
                    f"over links that passed both ways for the last {WINDOW}s"
                )

    def _stable_majority(self, leader: str, term: int, members: list[str]) -> list[str]:
        now = self.c.clock.now

        def steady(since: float | None) -> bool:
            return since is not None and now - since >= WINDOW

        if not (steady(self._running_since.get(leader))
                and steady(self._leading_since.get((leader, term)))):
            return []
        following = [leader]
        for m in members:
            node = self.c.nodes.get(m)
            replica = None if node is None else node.replica
            if m == leader or replica is None:
                continue
            if replica.engine.term != term or replica.engine.leader_id != leader:
                continue
            if steady(self._running_since.get(m)) and steady(
                    self._linked_since.get(frozenset((leader, m)))):
                following.append(m)
        return sorted(following) if len(following) * 2 > len(members) else []
