"""The ``client`` backend: fixtures replayed through a client of a one-member cluster.

A replay starts a fresh one-node :class:`~lazily_queue.testing.Cluster` serving one
client (an admin grant: topic seeding restores the topic) and opens the models'
cells on a :class:`~lazily_queue.client.ClusterClient` linked to it, so every op goes
under the client's session and every probe reads the client's mirror, current to what
the member applied. Each new cell is mirrored (and the member's state of it received)
before the fixture's first step; a consumer group is mirrored from its declaration. No
cluster ops: a client of one member has no other member to move to.
"""

from __future__ import annotations

import itertools
import secrets

from ..client import ClientAccess, ClientGrant, ClusterClient, Credentials
from ..node_cells import NodeCells
from ..testing import NodeOptions
from .backend import TopicAdapter, register_backend
from .raft import RaftBackend

_addresses = itertools.count(1)


class ClientBackend(RaftBackend):
    """:class:`RaftBackend` of one node, its models' cells a client's (module docstring)."""

    cluster_ops: frozenset[str] = frozenset()

    def __init__(self) -> None:
        super().__init__(1)
        self._token = secrets.token_hex(16).encode()
        self._address = f"memory://conformance-client-{next(_addresses)}"
        self.client: ClusterClient | None = None

    def node_options(self, node_id: str) -> NodeOptions:
        grant = ClientGrant("conformance", self._token, admin=["*"])
        return {**super().node_options(node_id),
                "clients": ClientAccess([grant], listen=self._address)}

    async def start(self) -> None:
        await super().start()
        client = ClusterClient(self._address, Credentials("conformance", self._token),
                               ping_interval=0.2, ping_timeout=5.0)
        try:
            await client.start()
        except BaseException:
            await self.stop()
            raise
        self.client = client

    async def stop(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.close()
        await super().stop()

    @property
    def cells(self) -> NodeCells:
        if self.client is None:
            raise RuntimeError("the client backend is not started")
        return self.client

    async def opened(self, kind: str, name: str) -> None:
        """Mirror the object before the fixture's first step, as its member has it."""
        client = self.cells
        assert isinstance(client, ClusterClient)
        getattr(client.view, kind)(name)  # reading it starts mirroring it
        await client.barrier()


    async def restart(self, adapter: TopicAdapter) -> TopicAdapter:
        """Restart the member; the client links to it again and its mirror catches up
        with what the member applies from its journal before the next step."""
        adapter = await super().restart(adapter)
        assert self.client is not None
        await self.client.barrier()
        return adapter


register_backend("client", ClientBackend)
