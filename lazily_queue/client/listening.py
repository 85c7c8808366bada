"""A member's own client addresses (a :class:`~.access.ClientAccess` with ``listen``):
listened on apart from the member's mesh, refusing peer links, each client link's frames
capped at the member's request limit."""

from __future__ import annotations

import errno
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from lazily_transports import ChannelHandler, LinkConfig, listen, scheme_of

from ..errors import AddressInUse
from ..pending_caps import listener_count, pending_caps
from .access import ClientAccess

if TYPE_CHECKING:
    from ..node import Node


async def listen_for_clients(node: Node, access: ClientAccess, on: tuple[str, ...],
                             max_request_bytes: int, serve: ChannelHandler,
                             listeners: list[AbstractAsyncContextManager[Any]],
                             addresses: list[str]) -> None:
    """Listen on each of ``on`` (``access.listen``) for ``node``'s clients, handing each link to
    ``serve``; each listener and its bound address is appended to ``listeners`` and
    ``addresses`` as it opens (the caller closes them, also when this raises)."""
    from ..raft.mesh import node_number

    pending, per_source = pending_caps(listener_count(node.listen, on))
    config = LinkConfig(peer_id=node_number(node.node_id), session_id=node.cluster,
                        secret=b"clients only: no peer links here",
                        client_max_frame_size=max_request_bytes,
                        max_pending_handshakes=pending, max_pending_per_source=per_source)
    for address in on:
        tls = access.ssl_context if scheme_of(address) in ("wss", "tls") else None
        context = listen(address, config, serve, credentials=access.credential,
                         accept_peer=lambda _peer: "this address serves clients only",
                         ssl_context=tls)
        try:
            listener = await context.__aenter__()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise AddressInUse.at(node.node_id, address, exc, clients=True) from None
        listeners.append(context)
        addresses.append(listener.address)
