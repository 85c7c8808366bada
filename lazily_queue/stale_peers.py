"""StalePeers: a member unlinked at its ``[peers]`` address is tried at the address the
cluster recorded for it, and the other way round.

A member removed and added back elsewhere (``add_member(ID, ADDRESS)``) has its new
address replicated, but a node whose configuration still lists the old one in
``[peers]`` dials that one first: it would stay unlinked from the member until its
configuration is corrected (and, when the removed process still runs there, reach
only that, refused). So a link down for a whole :data:`EVERY` seconds, and tried in vain
at its address since it was moved there (a dial or probe there failed: each address is
tried, however long the link's backoff), whose member has a ``[peers]`` address and a
recorded one leading to different places (:mod:`lazily_queue.address_places`: two
spellings of one place are one address), is moved to the other one. Once the member
links at its recorded address, one warning says which ``[peers]`` entry to correct;
while it links at neither, it is down, and one warning says so, repeated every
:data:`DOWN_EVERY` seconds while that lasts. It only changes where the node dials (or
probes): the link is authenticated as always.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .address_places import Place, place, places
from .background import Background

if TYPE_CHECKING:
    from lazily_transports import Mesh

    from .node import Node

log = logging.getLogger(__name__)

#: Seconds a member's link stays down at one address before the other one is tried.
EVERY = 10.0
#: Seconds between two warnings that a member links at neither of its addresses.
DOWN_EVERY = 300.0


class StalePeers(Background):
    """Moves the links of ``node``'s mesh between a member's ``[peers]`` address and
    the address the cluster recorded for it (module docstring), every :data:`EVERY`
    seconds once started (a node without a mesh network has nothing to move)."""

    def __init__(self, node: Node, clock: Callable[[], float] = time.monotonic) -> None:
        self.node = node
        self._clock = clock
        #: Each member's link as last looked at: its epoch and whether it was up.
        self._seen: dict[int, tuple[int, bool]] = {}
        #: Members already told to correct their ``[peers]`` entry (while linked).
        self._told: set[int] = set()
        #: Members tried at both addresses since they were last linked.
        self._both: set[int] = set()
        #: When each member was last said to be down.
        self._said_down: dict[int, float] = {}
        #: Where each address looked at leads (resolved off the event loop when running).
        self._places: dict[str, Place] = {}
        #: Links moved to another address so far.
        self.moved = 0

    def start(self) -> None:
        mesh = getattr(self.node.driver.network, "mesh", None)
        if mesh is not None:
            self._start_task(lambda: self._run(mesh), f"lazily-stale-peers-{self.node.node_id}")

    async def _run(self, mesh: Mesh) -> None:
        while True:
            await asyncio.sleep(EVERY)
            addresses = self._addresses(mesh)  # resolved off the loop, only when some
            self._places = await asyncio.to_thread(places, addresses) if addresses else {}
            self.look(mesh)

    def _addresses(self, mesh: Mesh) -> list[str]:
        pairs = (self._pair(str(number)) for number in list(mesh.peers))
        return [address for pair in pairs if pair is not None for address in pair]

    def _pair(self, peer: str) -> tuple[str, str] | None:
        """The member's ``[peers]`` and recorded addresses, when it has both and they
        are spelled differently."""
        configured = self.node.peers.get(peer)
        recorded = self.node.recorded_address(peer)
        if configured is None or recorded is None or configured == recorded:
            return None
        return configured, recorded

    def _place(self, address: str) -> Place:
        if address not in self._places:
            self._places[address] = place(address)
        return self._places[address]

    def look(self, mesh: Mesh) -> None:
        """Move every link down since the last look, and tried in vain at its address, to
        its member's other address."""
        seen: dict[int, tuple[int, bool]] = {}
        for number, current in mesh.peers.items():
            state = seen[number] = (mesh.epoch(number), mesh.is_up(number))
            pair = self._pair(str(number))
            if pair is None or self._place(pair[0]).same(self._place(pair[1])):
                continue
            if state[1]:
                self._both.discard(number)
                self._said_down.pop(number, None)
                if current == pair[1] and number not in self._told:
                    self._told.add(number)
                    self._say_stale(str(number), *pair)
                continue
            if self._seen.get(number) == state and mesh.failed_here(number):  # down all along
                self._told.discard(number)
                self._move(mesh, number, current, *pair)
        self._seen = seen

    def _move(self, mesh: Mesh, number: int, current: str, configured: str,
              recorded: str) -> None:
        node, peer = self.node, str(number)
        other = recorded if current == configured else configured
        mesh.readdress(number, other)
        self.moved += 1
        # Said once per outage: the moves after it are said by the warning that the
        # member links at neither address.
        log.log(logging.DEBUG if number in self._both or other == configured else logging.INFO,
                "node %s: member %s has not linked at %s for %.0f s: trying %s, its %s",
                node.node_id, peer, current, EVERY, other,
                "address the cluster recorded" if other == recorded
                else "address in this node's [peers]")
        if other == configured:
            self._both.add(number)
        said = self._said_down.get(number)
        if number in self._both and (said is None or self._clock() - said >= DOWN_EVERY):
            self._said_down[number] = self._clock()
            log.warning(
                "node %s: member %s links neither at %s, its address in this node's "
                "[peers], nor at %s, the address the cluster recorded for it: it looks "
                "down (this node keeps trying both; said again every %.0f s while it lasts)",
                node.node_id, peer, configured, recorded, DOWN_EVERY)

    def _say_stale(self, peer: str, configured: str, recorded: str) -> None:
        node = self.node
        log.warning(
            "node %s: member %s linked at %s, the address the cluster recorded for it; "
            "this node's [peers] lists %s, a stale address: set member %s's [peers] entry "
            "to %s in node %s's configuration",
            node.node_id, peer, recorded, configured, peer, recorded, node.node_id)
