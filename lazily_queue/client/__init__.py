"""Clients: processes that use a cluster's queues without being voting members.

``connect(addresses, credentials)`` gives a :class:`ClusterClient` (an async context
manager) linked to one member at a time, with the same cells a member has. Members
serve clients when given a :class:`ClientAccess` (``Node(clients=...)`` or the
``[[client]]`` tables of a node's configuration); each client authenticates with its
own token (:class:`Credentials`), never the cluster secret, and may do what its
:class:`ClientGrant` allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .access import ClientAccess, ClientGrant, Credentials
from .cluster import ClusterClient
from .protocol import (
    AccessDenied,
    ClientClosed,
    ClientError,
    PermissionDenied,
    RequestRefused,
    Unreachable,
)

#: Address schemes of cluster members (the others are brokers').
CLUSTER_SCHEMES = ("unix", "tcp", "ws", "wss", "memory")


def connect(
    addresses: str | Sequence[str],
    credentials: Credentials | tuple[str, bytes | str],
    **options: Any,
) -> ClusterClient:
    """A client of the members at ``addresses`` (tried in order), authenticated by
    ``credentials``; use it as ``async with connect(...) as client:``. ``options`` go
    to :class:`ClusterClient` (``op_timeout``, ``connect_timeout``, ``max_in_flight``,
    ``ping_interval``, ``ping_timeout``, ``ssl_context``, ``context``)."""
    return ClusterClient(addresses, credentials, **options)


__all__ = [
    "CLUSTER_SCHEMES",
    "AccessDenied",
    "ClientAccess",
    "ClientClosed",
    "ClientError",
    "ClientGrant",
    "ClusterClient",
    "Credentials",
    "PermissionDenied",
    "RequestRefused",
    "Unreachable",
    "connect",
]
