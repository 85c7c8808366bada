"""Membership changes in the simulated cluster: remove a member, then add it back empty.

One change runs at a time, driven through whichever member leads: the removal is
proposed until it commits; the removed member then stops and loses its data (its
term and vote are kept, so it cannot vote twice in a term, and it votes again only once
it has caught up, see :mod:`lazily_queue.raft.rejoin`), and after a while it is
added back and started empty, catching up from the leader like a new member.
"""

from __future__ import annotations

import functools
from typing import Any

from lazily_queue.raft.outcome import Outcome
from lazily_queue.raft.rejoin import wipe_for_rejoin

from .cluster import Cluster

IDLE, REMOVING, OUT, ADDING = "idle", "removing", "out", "adding"
PERIOD = 0.05
ANSWER_WAIT = 1.0


class Reconfiguration:
    """Removes one member and adds it back, retrying through leader changes."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.state = IDLE
        self.member: str | None = None
        self._asked = False
        self._asked_at = 0.0
        self._ever_asked = False
        self._add_at = 0.0
        #: The leader's last index when the change was first seen in its members.
        self._mark: int | None = None
        self.changes = 0
        self._run = 0

    @property
    def held_out(self) -> str | None:
        """The member that is out of the cluster (and must not be restarted), if any."""
        return self.member if self.state in (OUT, ADDING) else None

    def start(self, member: str, down: float) -> bool:
        if self.state != IDLE or len(self.cluster.node_ids) < 3:
            return False
        self.state, self.member, self._asked = REMOVING, member, False
        self._ever_asked = False
        self._mark = None
        self._down = down
        self.cluster.trace(f"fault remove member {member}, add it back after {down}s")
        self._run += 1
        self.cluster.at(self.cluster.clock.now + PERIOD, functools.partial(self._tick, self._run))
        return True

    def _leader(self) -> tuple[str, Any] | None:
        c = self.cluster
        n = c.leader()
        if n is None or c.is_paused(n):
            return None
        replica = c.nodes[n].replica
        if replica is not None and n == self.member:
            # A leader cannot remove itself. Before anything was proposed, remove another
            # follower instead; after, only one change may be in flight: move leadership.
            others = [m for m in replica.engine.members if m != n]
            if self.state == REMOVING and not self._ever_asked and others:
                self.member = others[0]
                c.trace(f"member {n} leads; removing {self.member} instead")
            else:
                # A transfer needs a follower with every entry, rare under load: stop the
                # leader for a second instead, so that another member takes over.
                c.trace(f"member {n} leads with a change in flight; stopped for a second")
                c.pause(n)
                c.at(c.clock.now + 1.0, functools.partial(c.resume, n))
                return None
        return None if replica is None else (n, replica)

    def _settled(self, replica: Any) -> bool:
        """Whether every entry the leader held when it was first seen with the change
        has committed (the change among them); not "every entry": under steady load a
        leader always has some in flight, and the change would never be seen done."""
        if self._mark is None:
            self._mark = replica.journal.last_index
        return bool(replica.engine.commit_index >= self._mark)

    def _tick(self, run: int) -> None:
        c = self.cluster
        if run != self._run or self.member is None:
            return
        if self._asked and c.clock.now > self._asked_at + ANSWER_WAIT:
            self._asked = False  # the request or its answer was lost with a leader
        found = self._leader()
        member = self.member
        if self.state == REMOVING and found is not None:
            n, replica = found
            if member not in replica.engine.members and self._settled(replica):
                self._removed(member)
            elif member in replica.engine.members and not self._asked:
                self._asked, self._asked_at, self._ever_asked = True, c.clock.now, True
                replica.engine.remove_member(member, self._answer(self._removed))
                c.wake(n)
        elif self.state == OUT and c.clock.now >= self._add_at:
            self.state, self._asked, self._mark = ADDING, False, None
        elif self.state == ADDING and found is not None:
            n, replica = found
            if member in replica.engine.members and self._settled(replica):
                self._added(member)
            elif member not in replica.engine.members and not self._asked:
                self._asked, self._asked_at = True, c.clock.now
                replica.engine.add_member(member, self._answer(self._added))
                c.wake(n)
        if self.state != IDLE:
            c.at(c.clock.now + PERIOD, functools.partial(self._tick, run))

    def _answer(self, then: Any) -> Any:
        member, state = self.member, self.state

        def answer(_result: Any, outcome: Outcome) -> None:
            if self.member != member or self.state != state:
                return
            if outcome is Outcome.SUCCESS:
                then(member)
            else:
                self._asked = False

        return answer

    def _removed(self, member: str) -> None:
        c = self.cluster
        if self.state != REMOVING:
            return
        c.trace(f"member {member} removed; it stops and loses its data")
        c.crash_node(member)
        node = c.nodes[member]
        node.disk.free()  # the operator rebuilding the member gives it a working disk
        wipe_for_rejoin(node.disk, node.dir, f"{node.dir}/snapshot.cbor")
        self.state, self._add_at = OUT, c.clock.now + self._down

    def _added(self, member: str) -> None:
        c = self.cluster
        if self.state != ADDING:
            return
        self.state, self.member = IDLE, None
        self.changes += 1
        c.trace(f"member {member} added back; it starts empty")
        if not c.nodes[member].running:
            c.start_node(member)
