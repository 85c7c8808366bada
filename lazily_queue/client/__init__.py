"""Clients: processes that use a cluster's queues without being voting members.

``connect(addresses, credentials)`` gives a :class:`ClusterClient` (an async context
manager) linked to one member at a time, with the same cells a member has; given a
``nats://`` or ``redis://`` address it gives a :class:`Client` over that broker
(:mod:`.brokers`) with the same cells. Members
serve clients when given a :class:`ClientAccess` (``Node(clients=...)`` or the
``[[client]]`` tables of a node's configuration); each client authenticates with its
own token (:class:`Credentials`) or TLS client certificate
(:class:`CertificateCredentials`), never the cluster secret, and may do what its
:class:`ClientGrant` allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, overload

from lazily_transports import AddressError, scheme_of
from lazily_transports.sockets import parse_unix

from ..brokers.errors import UnsupportedAddress
from ..config_keys import link_address_host
from ..errors import InvalidConfiguration
from .access import ClientAccess, ClientGrant, Credentials
from .brokers import BROKER_SCHEMES, BrokerCredentials, Client, Connecting
from .brokers import connect as connect_broker
from .brokers import scheme_of as broker_scheme_of
from .certificates import CertificateCredentials
from .cluster import ClusterClient
from .protocol import (
    AccessDenied,
    ClientClosed,
    ClientError,
    FrameBudgetFull,
    PermissionDenied,
    RequestRefused,
    SessionForgotten,
    TooManyLinks,
    Unreachable,
)

#: Address schemes of cluster members.
CLUSTER_SCHEMES = frozenset({"unix", "tcp", "tls", "ws", "wss", "memory"})


def _scheme(address: str) -> str | None:
    try:
        return scheme_of(address).lower()
    except AddressError:
        return None


#: Credentials only a cluster client takes.
ClusterCredentials = Credentials | CertificateCredentials | tuple[str, bytes | str]


@overload
def connect(addresses: str | Sequence[str], credentials: ClusterCredentials,
            **options: Any) -> ClusterClient: ...
@overload
def connect(addresses: str, credentials: str | None = None,
            **options: Any) -> Connecting: ...
@overload
def connect(addresses: str, credentials: Mapping[str, str],
            **options: Any) -> ClusterClient | Connecting: ...
@overload
def connect(addresses: Sequence[str], credentials: Mapping[str, str],
            **options: Any) -> ClusterClient: ...
def connect(
    addresses: str | Sequence[str],
    credentials: ClusterCredentials | Mapping[str, str] | str | None = None,
    **options: Any,
) -> ClusterClient | Connecting:
    """A client of a broker (one ``nats://``, ``nats+tls://``, ``redis://`` or
    ``rediss://`` address: see :func:`.brokers.connect`), or of the members at
    ``addresses`` (tried in order), authenticated by ``credentials``: a token
    (:class:`Credentials`, ``(name, token)`` or ``{"name": ..., "token": ...}``) or a
    TLS client certificate (:class:`CertificateCredentials` or ``{"name": ...,
    "certificate": ..., "key": ..., "ca": ...}``, over ``tls://`` or ``wss://``):
    ``async with connect(...) as client:``, or ``client = await connect(...)`` (close it
    with ``await client.close()``). ``options`` go to :class:`ClusterClient`
    (``op_timeout``, ``connect_timeout``, ``max_in_flight``, ``ping_interval``,
    ``ping_timeout``, ``prefer_leader``, ``ssl_context``, ``context``). Raises
    ``UnsupportedAddress`` (an ``AddressError``) for an address of another scheme, or
    one no member can be reached at (no port, a ``unix://`` host part, ...)."""
    if isinstance(addresses, str) and _scheme(addresses) not in CLUSTER_SCHEMES:
        broker_scheme_of(addresses)
        if credentials is not None and not isinstance(credentials, str | Mapping):
            raise InvalidConfiguration(
                "a broker's credentials are a secret (str) or a mapping, not "
                f"{type(credentials).__name__}")
        broker_credentials: BrokerCredentials = credentials
        return connect_broker(addresses, broker_credentials, **options)
    listed = [addresses] if isinstance(addresses, str) else list(addresses)
    for address in listed:
        _check_member_address(address)
    if credentials is None or isinstance(credentials, str):
        raise InvalidConfiguration(
            "a cluster client needs its credentials: Credentials(name, token), (name, "
            "token), {'name': ..., 'token': ...} (a token the members list in [[client]]) "
            "or CertificateCredentials(name, certificate, key, ca)")
    if isinstance(credentials, Mapping):
        credentials = _from_mapping(credentials)
    if isinstance(credentials, CertificateCredentials):
        for address in listed:
            if scheme_of(address) not in ("tls", "wss"):
                raise InvalidConfiguration(
                    f"client {credentials.name!r} proves its name with a TLS certificate: "
                    f"reach the members at tls:// or wss:// addresses, not {address!r}")
    return ClusterClient(listed, credentials, **options)


def _check_member_address(address: str) -> None:
    """Refuse, before anything runs, an address no member can be reached at (no
    scheme, another scheme, a malformed one): ``UnsupportedAddress`` naming it."""
    scheme = _scheme(address) if isinstance(address, str) else None
    if scheme not in CLUSTER_SCHEMES:
        raise UnsupportedAddress(
            f"cannot connect to {address!r}: cluster members are reached at unix:, "
            "tcp://, tls://, ws:// or wss:// addresses")
    try:
        if scheme == "unix":
            parse_unix(address)
        else:
            link_address_host(address, listening=False)
    except AddressError as exc:
        raise UnsupportedAddress(f"cannot connect: {exc}") from None


def _from_mapping(credentials: Mapping[str, str]) -> Credentials | CertificateCredentials | (
        tuple[str, str]):
    keys = set(credentials)
    if keys == {"name", "token"}:
        return (credentials["name"], credentials["token"])
    if {"name", "certificate", "key"} <= keys <= {"name", "certificate", "key", "ca"}:
        return CertificateCredentials(credentials["name"], credentials["certificate"],
                                      credentials["key"], credentials.get("ca"))
    raise InvalidConfiguration(
        "cluster credentials are {'name': ..., 'token': ...}, {'name': ..., 'certificate': "
        "..., 'key': ..., 'ca': ...}, (name, token), Credentials(name, token) or "
        "CertificateCredentials(name, certificate, key, ca)")


__all__ = [
    "BROKER_SCHEMES",
    "CLUSTER_SCHEMES",
    "AccessDenied",
    "CertificateCredentials",
    "Client",
    "ClientAccess",
    "ClientClosed",
    "ClientError",
    "ClientGrant",
    "ClusterClient",
    "Connecting",
    "Credentials",
    "FrameBudgetFull",
    "PermissionDenied",
    "RequestRefused",
    "SessionForgotten",
    "TooManyLinks",
    "Unreachable",
    "connect",
]
