"""ClientLiveness: a member serving clients says which of its linked clients own
ephemeral subscriptions, so that those of a client gone for good can be ended.

Every :data:`REFRESH_INTERVAL` seconds (and within :data:`TICK` seconds of a client
owning some linking here, say after it relinked from another member) the member
proposes one ``CLIENT_ALIVE`` op listing those clients' sessions (at most
:data:`CHUNK` per op). The leader ends the ephemeral subscriptions of a session no
member refreshed for :data:`~lazily_queue.replicated.ephemeral_owners.GRACE_MS`
(:mod:`lazily_queue.replicated.ephemeral_owners`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from ..background import Background
from ..replicated import ops

if TYPE_CHECKING:
    from ..node import Node
    from .connection import ClientConnection

log = logging.getLogger(__name__)

#: Seconds between two refreshes of the linked owner sessions.
REFRESH_INTERVAL = 20.0
#: Longest pause between two looks at the links.
TICK = 1.0
#: Sessions listed in one ``CLIENT_ALIVE`` op.
CHUNK = 1000


class ClientLiveness(Background):
    """Refreshes the owner sessions among ``conns`` (module docstring)."""

    def __init__(self, node: Node, conns: Collection[ClientConnection]) -> None:
        self.node = node
        self._conns = conns
        #: The sessions the last refresh listed.
        self._told: set[int] = set()
        #: Refresh ops proposed, in all.
        self.refreshes = 0

    def start(self) -> None:
        self._start_task(self._run, f"lazily-client-liveness-{self.node.node_id}")

    def owners(self) -> set[int]:
        """The sessions of the linked clients owning ephemeral subscriptions."""
        view = self.node.view
        return {conn.session for conn in list(self._conns)
                if conn.session is not None and not conn.closed
                and view.ephemeral_owner(conn.session)}

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(min(TICK, REFRESH_INTERVAL))
            sessions = self.owners()
            due = loop.time() - last >= REFRESH_INTERVAL
            if not sessions or not (due or sessions - self._told):
                if due:
                    last = loop.time()
                    self._told = sessions
                continue
            last = loop.time()
            try:
                await self.refresh(sorted(sessions))
                self._told = sessions
            except Exception as exc:
                log.info("node %s: could not refresh the sessions of its clients: %s",
                         self.node.node_id, exc)

    async def refresh(self, sessions: list[int]) -> None:
        """Propose ``CLIENT_ALIVE`` for ``sessions`` and wait for it to apply."""
        node = self.node
        for start in range(0, len(sessions), CHUNK):
            self.refreshes += 1
            await node.driver.call(ops.CLIENT_ALIVE, [sessions[start:start + CHUNK]],
                                   timeout=node.op_timeout)
