"""Where the garbage collector's thaw may pause a node (:func:`~.allocator.freeze_survivors`).

A full collection that traverses every exempt object again can take hundreds of
milliseconds with a large backlog: longer than the election timeout. On the only voter
of a cluster that costs no election. On the leader of others it does: the followers
elect another. On a follower it costs nothing as long as the other followers keep
hearing from the leader (pre-vote: they refuse the paused one's round when it resumes),
but followers apply the same entries and collect at the same moments, so two of them
paused together grant each other's round and depose the leader. :class:`ThawGuard`
tells the allocator (:meth:`ThawGuard.may_thaw`): the only voter may thaw; the leader
of others may not; the followers take turns by the wall clock, one per
:data:`TURN` seconds, in the order of their ids, each thawing only in the first
:data:`WINDOW` of its turn (members' clocks must agree within a few seconds, or two may
thaw together). A leader defers the thaw, and once its exempt objects are far past the
bound (``overdue``) :meth:`ThawGuard.run` hands leadership to the most caught-up
follower, from the event loop, so that it thaws as a follower.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import LazilyQueueError

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: Seconds between looks at whether a thaw is due or a hand-over wanted.
CHECK_INTERVAL = 1.0
#: Seconds of wall-clock time each follower in turn may thaw in ...
TURN = 10.0
#: ... in this first part of its turn, so that its pause ends before the next one's.
WINDOW = 0.6
#: Seconds a node leads before it hands leadership over for its thaw: a follower given
#: leadership that was due to thaw too does not hand it straight back.
SETTLE = 60.0


class ThawGuard:
    """The role-dependent hooks of :func:`~.allocator.freeze_survivors` for one node."""

    def __init__(self, node: Node, *, clock: Callable[[], float] = time.time,
                 settle: float | None = None) -> None:
        """``clock``: the wall clock the members' turns follow; ``settle``: seconds of
        leading before a hand-over (:data:`SETTLE` by default)."""
        self.node = node
        self._clock = clock
        self._settle = settle
        self._due = False
        self._wanted = False
        self._led_since: float | None = None
        #: Due thaws this node started itself in its turn.
        self.thaws_started = 0
        #: Leadership hand-overs asked for the thaw, and those that moved leadership.
        self.asked = 0
        self.handed_over = 0

    def may_thaw(self) -> bool:
        """Whether a long pause here costs no election: this node is the only voter, or
        a follower in the window of its turn (run by the collector when a thaw is due,
        which a True answer lets run)."""
        node = self.node
        if not node.running or len(node.driver.replica.engine.members) <= 1:
            self._due = self._wanted = False
            return True
        engine = node.driver.replica.engine
        members = engine.members
        leader = engine.leader_id
        if engine.is_leader or leader is None:
            return False
        followers = [m for m in members if m != leader]
        now = self._clock()
        turn = followers[int(now // TURN) % len(followers)]
        allowed = turn == node.node_id and now % TURN < TURN * WINDOW
        if allowed:
            self._due = self._wanted = False  # asked when one is due: this collection thaws
        return allowed

    def due(self, overdue: bool) -> None:
        """Record that the next full collection would thaw, and whether a leader should
        hand over for it (run by the collector)."""
        self._due = True
        if overdue:
            self._wanted = True

    def _leading_for(self) -> float:
        """Seconds this node has led, as seen at each look (0 when not leading)."""
        if not self.node.is_leader:
            self._led_since = None
            return 0.0
        now = time.monotonic()
        if self._led_since is None:
            self._led_since = now
        return now - self._led_since

    def thaw_if_due(self) -> bool:
        """Start the due thaw now if this node may pause (a full collection, which
        traverses the exempt objects); True when it did."""
        if not self._due or not self.may_thaw():
            return False
        self.thaws_started += 1
        gc.collect()
        return True

    async def hand_over(self) -> bool:
        """If the thaw is overdue and this node has led others for ``settle`` seconds,
        transfer leadership to the most caught-up follower; True when it moved."""
        node = self.node
        if (not self._wanted or not node.is_leader or self._leading_for() < (
                SETTLE if self._settle is None else self._settle)
                or len(node.driver.replica.engine.members) <= 1):
            return False
        self._wanted = False
        self.asked += 1
        try:
            leader = await node.transfer_leadership()
        except (LazilyQueueError, TimeoutError) as exc:
            log.warning("node %s could not hand leadership over before its garbage "
                        "collection traverses the objects it spared: %s (asked again "
                        "after the next full collection)", self.node.node_id, exc)
            return False
        self.handed_over += 1
        log.info("node %s handed leadership to %s so that its garbage collection may "
                 "traverse the objects it spared", self.node.node_id, leader)
        return True

    async def run(self, *, interval: float | None = None) -> None:
        """While the node runs, every ``interval`` seconds (:data:`CHECK_INTERVAL` by
        default): :meth:`thaw_if_due`, :meth:`hand_over`."""
        while self.node.running:
            await asyncio.sleep(CHECK_INTERVAL if interval is None else interval)
            self._leading_for()
            if self.node.running and not self.thaw_if_due():
                await self.hand_over()
