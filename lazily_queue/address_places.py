"""Where a member address leads, so that two spellings of one place compare equal
(``tcp://localhost:7001`` and ``tcp://127.0.0.1:7001``, ``unix:./n3.sock`` and
``unix:///srv/q/n3.sock``); and a bound address shown with the host name configured
for it (:func:`with_configured_name`)."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lazily_transports import AddressError, scheme_of
from lazily_transports.socket_addresses import parse_tcp, parse_unix

#: Schemes whose addresses name a host.
HOSTED = frozenset({"tcp", "tls", "ws", "wss", "http", "https"})
#: Schemes whose host name is checked against the peer's certificate: two names of one
#: host are two places there (one may be refused where the other links).
NAMED = frozenset({"tls", "wss"})


@dataclass(frozen=True)
class Place:
    """An address's scheme, resolved host (its IP addresses; a unix socket's real path)
    or, for :data:`NAMED` schemes, host name, port and path."""

    scheme: str
    hosts: frozenset[str]
    port: int = 0
    path: str = ""

    def same(self, other: Place) -> bool:
        """Whether both lead to one listener: same scheme, port and path, and a host in
        common."""
        return (self.scheme == other.scheme and self.port == other.port
                and self.path == other.path and bool(self.hosts & other.hosts))


def place(address: str) -> Place:
    """Where ``address`` leads (resolving its host name: this may block on DNS); an
    address that does not parse or resolve is a place of its own."""
    try:
        scheme = scheme_of(address)
        if scheme == "unix":
            return Place(scheme, frozenset({os.path.realpath(parse_unix(address))}))
        path = ""
        if scheme in ("tcp", "tls"):
            host, port = parse_tcp(address, listening=False)
        elif scheme in ("ws", "wss"):
            parts = urlsplit(address)
            host, path = parts.hostname or "", parts.path or "/"
            port = parts.port or (443 if scheme == "wss" else 80)
        else:
            return Place("", frozenset({address}))
        if scheme in NAMED:
            return Place(scheme, frozenset({host.lower()}), port, path)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return Place(scheme, frozenset(str(info[4][0]) for info in infos), port, path)
    except (AddressError, OSError, ValueError, UnicodeError):
        return Place("", frozenset({address}))


def places(addresses: Iterable[str]) -> dict[str, Place]:
    """:func:`place` of each address."""
    return {address: place(address) for address in set(addresses)}


def same_place() -> Callable[[str, str], bool]:
    """A test of whether two addresses lead to one place (equal ones without resolving),
    resolving each address once."""
    seen: dict[str, Place] = {}

    def same(one: str, other: str) -> bool:
        if one == other:
            return True
        for address in (one, other):
            if address not in seen:
                seen[address] = place(address)
        return seen[one].same(seen[other])

    return same


def with_configured_name(configured: str, bound: str) -> str:
    """``bound``, the address a listener is bound to, as a node shows it: where
    ``configured`` (the address it was given) names its host by a name, that name with
    the bound port, which is what the others dial, then the bound host and port, as in
    ``tcp://node-a:7001 (bound 10.0.0.5:7001)``; otherwise ``bound``."""
    given, parts = urlsplit(configured), urlsplit(bound)
    name, host = given.hostname, parts.hostname
    try:
        port = parts.port
    except ValueError:
        return bound
    if parts.scheme not in HOSTED or not name or not host or port is None or name == host:
        return bound
    try:
        ipaddress.ip_address(name)
    except ValueError:
        host = f"[{host}]" if ":" in host else host
        return f"{parts._replace(netloc=f'{name}:{port}').geturl()} (bound {host}:{port})"
    return bound
