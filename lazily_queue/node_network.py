"""The network a :class:`~lazily_queue.node.Node` makes when none is given: its mesh
(:class:`~lazily_queue.raft.mesh.MeshNetwork`) on its listen address, to its peers.

The incarnations of its peers it pinned and those it retired are read from the
journal's metadata and written back there as they change: a restarted node keeps them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lazily_transports import DEFAULT_CLIENT_MAX_FRAME_SIZE, AddressError, scheme_of

from .errors import InvalidConfiguration
from .links import LinkSettings
from .pending_caps import listener_count, pending_caps
from .raft.journal import DurableJournal
from .raft.network import RaftNetwork

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: A cluster secret shorter than this (bytes) on a network address is warned about.
SHORT_SECRET = 16
#: Schemes whose listeners only processes of this host can reach.
LOCAL_SCHEMES = frozenset({"unix", "memory"})


def weak_secret(secret: bytes | None, addresses: Iterable[str]) -> bool:
    """Whether ``secret`` is short enough to guess while one of ``addresses`` is
    reachable over a network (nothing limits a stranger's online guesses)."""
    if secret is None or len(secret) >= SHORT_SECRET:
        return False
    for address in addresses:
        try:
            if scheme_of(address) not in LOCAL_SCHEMES:
                return True
        except AddressError:
            continue
    return False


def mesh_network(node: Node, *, secret: bytes | None, allow_unauthenticated: bool,
                 links: LinkSettings | None, journal: DurableJournal | None,
                 live_window: float) -> RaftNetwork:
    """``node``'s mesh, authenticated by ``secret``; raises
    :class:`InvalidConfiguration` when the node has no listen address."""
    from .raft.mesh import MeshNetwork

    if node.listen is None:
        raise InvalidConfiguration(
            f"node {node.node_id}: give `listen=` (its own address, e.g. "
            "'unix:///run/q1.sock' or 'tcp://127.0.0.1:7001') or include it in `peers`"
        )
    meta = journal.meta if journal is not None else {}
    clients = node.clients
    if weak_secret(secret, [node.listen, *node.peers.values()]):
        log.warning(
            "node %s: the cluster secret has %d bytes and this member listens or dials "
            "over a network: whoever reaches its address can try guesses of it, and "
            "nothing limits how many; use at least %d random bytes (openssl rand -hex 32)",
            node.node_id, len(secret or b""), SHORT_SECRET)
    return MeshNetwork(
        node.node_id,
        listen=node.listen,
        peers=node.peers,
        cluster=node.cluster,
        secret=secret,
        allow_unauthenticated=allow_unauthenticated,
        **(links.mesh_options() if links is not None else {}),
        incarnation=str(meta.get("incarnation", "")),
        pins=meta.get("peer_incarnations") or {},
        on_pin=None if journal is None else (
            lambda pins: journal.set_meta("peer_incarnations", pins)),
        retired=meta.get("retired_incarnations") or {},
        on_retire=None if journal is None else (
            lambda retired: journal.set_meta("retired_incarnations", retired)),
        clients=None if clients is None else clients.on_listen_address(),
        client_max_frame_size=(DEFAULT_CLIENT_MAX_FRAME_SIZE if clients is None
                               else clients.max_request_bytes),
        pending=pending_caps(listener_count(
            node.listen, None if clients is None else clients.access.listen), report=True),
        live_window=live_window,
    )
