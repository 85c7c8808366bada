"""Caps on the connections of a node's HTTP server (status page, metrics, admin API).

HTTP has no connection-level authentication, so every connection counts against an
:class:`~lazily_transports.AdmissionGate` for as long as it is open: at most
``max_total`` in all and ``max_per_source`` from one IP address. A connection over a
cap is closed at once (counted and logged at most once per 10 s), so strangers cannot
spend the file descriptors the node's journal, snapshots and links need.
:func:`serve` listens with the gate in front of an aiohttp runner's protocol factory.

A request is answered only for the node's own names (:func:`own_host`): a page of
another site whose DNS name its owner re-points at the node's address (DNS
rebinding) sends that site's name in ``Host`` and is refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any, cast
from urllib.parse import urlsplit

from lazily_transports import AdmissionGate


class _Gated(asyncio.Protocol):
    """One connection: admitted by the gate, then handed to the HTTP protocol."""

    def __init__(self, inner: asyncio.Protocol, gate: AdmissionGate) -> None:
        self.inner = inner
        self.gate = gate
        self.source: str | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        source = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        if not self.gate.admit(source):
            cast(asyncio.Transport, transport).abort()
            return
        self.source = source
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.source is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.source is not None else None

    def pause_writing(self) -> None:
        if self.source is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.source is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.source is not None:
            self.gate.release(self.source)
            self.source = None
            self.inner.connection_lost(exc)


async def serve(factory: Callable[[], Any], host: str, port: int, gate: AdmissionGate,
                *, start_serving: bool = True) -> asyncio.Server:
    """Listen on ``host:port`` with ``factory``'s protocols behind ``gate`` (with
    ``start_serving=False``, bound but accepting only from ``start_serving()``)."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: _Gated(cast(asyncio.Protocol, factory()), gate), host, port,
        reuse_address=True, start_serving=start_serving)


#: Names that always mean this machine.
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})


def host_name(header: str) -> str | None:
    """The name in a ``Host`` header: lower case, without port, brackets or a final dot
    (``None``: not a host name)."""
    try:
        name = urlsplit("//" + header.strip()).hostname
    except ValueError:
        return None
    return None if not name else name.rstrip(".")


def own_host(header: str | None, names: Iterable[str]) -> bool:
    """Whether a request with this ``Host`` header is meant for this node: no header, an
    IP address, ``localhost`` (or a name under ``.localhost``), a name without a dot
    (resolved by the local network, never by another site's DNS), or one of ``names``
    (its configured and advertised host names)."""
    if header is None:
        return True
    name = host_name(header)
    if name is None:
        return False
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return ("." not in name or name in LOCAL_NAMES or name.endswith(".localhost")
            or name in {n.lower().rstrip(".") for n in names})


def own_names(http_host: str, advertise: str | None) -> set[str]:
    """A node's own host names: the one it listens on, its machine's, and its advertised
    page's (``http_advertise``)."""
    names = {http_host, socket.gethostname()}
    if advertise is not None:
        names.add(urlsplit(advertise).hostname or "")
    return names
