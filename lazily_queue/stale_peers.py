"""StalePeers: a member unlinked at its ``[peers]`` address is tried at the address the
cluster recorded for it, and the other way round.

A member removed and added back elsewhere (``add_member(ID, ADDRESS)``) has its new
address replicated, but a node whose configuration still lists the old one in
``[peers]`` dials that one first: it would stay unlinked from the member until its
configuration is corrected (and, when the removed process still runs there, reach
only that, refused). So a link down for a whole :data:`EVERY` seconds, whose member has
both a ``[peers]`` address and a recorded one that differ, is moved to the other one,
with one warning naming the member, both addresses and the fix; once the member links
at its recorded address, one more line says which ``[peers]`` entry to correct. It
only changes where the node dials (or probes): the link is authenticated as always.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from .background import Background

if TYPE_CHECKING:
    from lazily_transports import Mesh

    from .node import Node

log = logging.getLogger(__name__)

#: Seconds a member's link stays down at one address before the other one is tried.
EVERY = 10.0


class StalePeers(Background):
    """Moves the links of ``node``'s mesh between a member's ``[peers]`` address and
    the address the cluster recorded for it (module docstring), every :data:`EVERY`
    seconds once started (a node without a mesh network has nothing to move)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        #: Each member's link as last looked at: its epoch and whether it was up.
        self._seen: dict[int, tuple[int, bool]] = {}
        #: Members already told to correct their ``[peers]`` entry (while linked).
        self._told: set[int] = set()
        #: Links moved to another address so far.
        self.moved = 0

    def start(self) -> None:
        mesh = getattr(self.node.driver.network, "mesh", None)
        if mesh is not None:
            self._start_task(lambda: self._run(mesh), f"lazily-stale-peers-{self.node.node_id}")

    async def _run(self, mesh: Mesh) -> None:
        while True:
            await asyncio.sleep(EVERY)
            self.look(mesh)

    def look(self, mesh: Mesh) -> None:
        """Move every link down since the last look to its member's other address."""
        node = self.node
        seen: dict[int, tuple[int, bool]] = {}
        for number, current in mesh.peers.items():
            peer = str(number)
            state = seen[number] = (mesh.epoch(number), mesh.is_up(number))
            configured = node.peers.get(peer)
            recorded = node.recorded_address(peer)
            if configured is None or recorded is None or configured == recorded:
                continue
            if state[1]:
                if current == recorded and number not in self._told:
                    self._told.add(number)
                    log.warning(
                        "node %s: member %s linked at %s, the address the cluster recorded "
                        "for it; this node's [peers] lists %s, a stale address: set member "
                        "%s's [peers] entry to %s in node %s's configuration",
                        node.node_id, peer, recorded, configured, peer, recorded,
                        node.node_id)
                continue
            if self._seen.get(number) != state:
                continue  # not down all along since the last look
            self._told.discard(number)
            other = recorded if current == configured else configured
            mesh.readdress(number, other)
            self.moved += 1
            if other == recorded:
                log.warning(
                    "node %s: member %s has not linked at %s, its address in this node's "
                    "[peers], for %.0f s; the cluster recorded %s for it when it was "
                    "added: trying that. If member %s moved, set its [peers] entry to %s "
                    "in node %s's configuration",
                    node.node_id, peer, configured, EVERY, recorded, peer, recorded,
                    node.node_id)
            else:
                log.warning(
                    "node %s: member %s has not linked at %s, the address the cluster "
                    "recorded for it, for %.0f s either: trying %s, its address in this "
                    "node's [peers], again", node.node_id, peer, recorded, EVERY, configured)
        self._seen = seen
