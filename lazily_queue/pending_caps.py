"""The caps on connections still in their handshake, fitted to the open-file limit.

Each listener of a member (its ``listen`` address, and the clients' own addresses)
holds at most ``max_pending_handshakes`` connections not yet authenticated and
``max_pending_per_source`` from one source (:mod:`lazily_transports`; 128 and 8). Each
costs a file descriptor, and the client-link cap's reserve (:func:`.client.link_caps.fd_reserve`)
does not count them: at a low ``ulimit -n`` strangers connecting to every listener
would take the descriptors the peers' and clients' links, the journal and snapshots
need (EMFILE). So the listeners share at most :data:`SHARE` of the open-file limit
(at least one connection each): the caps are lowered to fit, with one log line naming
``ulimit -n``.
"""

from __future__ import annotations

import logging
import resource

from lazily_transports import DEFAULT_MAX_PENDING_HANDSHAKES, DEFAULT_MAX_PENDING_PER_SOURCE

__all__ = ["SHARE", "listener_count", "pending_caps"]

log = logging.getLogger(__name__)

#: The part of the open-file limit pending handshakes of all listeners may hold.
SHARE = 1 / 8


def listener_count(listen: str | None, clients_listen: tuple[str, ...] | None) -> int:
    """The listeners of a member: its ``listen`` address and the clients' own."""
    return (1 if listen else 0) + len(clients_listen or ())


def pending_caps(listeners: int, soft: int | None = None, *,
                 report: bool = False) -> tuple[int, int]:
    """``max_pending_handshakes`` and ``max_pending_per_source`` of each of a member's
    ``listeners`` under an open-file limit of ``soft`` (``None``: the process's own);
    ``report`` logs the line saying they were lowered, when they were."""
    if soft is None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            return DEFAULT_MAX_PENDING_HANDSHAKES, DEFAULT_MAX_PENDING_PER_SOURCE
    fitted = max(1, int(soft * SHARE) // max(1, listeners))
    pending = min(DEFAULT_MAX_PENDING_HANDSHAKES, fitted)
    per_source = min(DEFAULT_MAX_PENDING_PER_SOURCE, pending)
    if report and pending < DEFAULT_MAX_PENDING_HANDSHAKES:
        log.warning(
            "connections in their handshake capped at %d per listener (%d from one source) "
            "on %d listeners, lowered from %d to fit the open-file limit (ulimit -n %d): "
            "the rest of it stays for the links of peers and clients and the member's "
            "files; raise ulimit -n to accept more at once", pending, per_source, listeners,
            DEFAULT_MAX_PENDING_HANDSHAKES, soft)
    return pending, per_source
