"""Caps on the connections of a node's HTTP server (status page, metrics, admin API).

HTTP has no connection-level authentication, so every connection counts against an
:class:`~lazily_transports.AdmissionGate` for as long as it is open: at most
``max_total`` in all and ``max_per_source`` from one IP address. A connection over a
cap is closed at once (counted and logged at most once per 10 s), so strangers cannot
spend the file descriptors the node's journal, snapshots and links need; when every
slot is taken, a source holding few takes the place of the oldest connection of the
source holding the most (:class:`Connections`), so strangers holding every slot from a
few addresses cannot keep the members from reading the node's vitals; and a connection
whose reader does not take its answers is closed once it has waited a while in all.
:func:`serve` listens with the gate in front of an aiohttp runner's protocol factory.

A request is answered only for the node's own names (:func:`own_host`): a page of
another site whose DNS name its owner re-points at the node's address (DNS
rebinding) sends that site's name in ``Host`` and is refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any, cast
from urllib.parse import urlsplit

from lazily_transports import AdmissionGate, LogLimiter, source_of

log = logging.getLogger(__name__)


class Connections:
    """The open connections of one listener by source, counted by ``gate``.

    When every slot is taken, a connection from a source holding fewer than the
    heaviest source less one takes the place of that source's oldest connection, which
    is closed: a stranger holding every slot from a few addresses gives way to a reader
    from another (a member reading the page's vitals), while sources holding as many as
    each other do not push each other out.

    ``stall_limit``: the seconds in all a connection may wait for its reader to take
    the answers written to it since it last took them all (``None``: no limit); one that
    waits longer is closed, so a reader that does not read cannot hold its answers in
    the node's memory, while a slow one polling on a kept-alive connection is not cut."""

    def __init__(self, gate: AdmissionGate, *, stall_limit: float | None = None) -> None:
        self.gate = gate
        self.stall_limit = stall_limit
        #: Connections closed past ``stall_limit``.
        self.stalled = 0
        self._stall_log = LogLimiter()

    @property
    def evicted(self) -> int:
        """Connections closed to make room for another source's."""
        return self.gate.evicted

    def stats(self) -> dict[str, int]:
        """What the status shows: connections open now and, since the start, those
        refused at a cap, closed to make room for another source's and closed because
        their reader did not take the answers."""
        gate = self.gate
        return {"open_connections": gate.pending, "max_connections": gate.max_pending,
                "max_per_source": gate.max_per_source, "refused_connections": gate.refused,
                "evicted_connections": gate.evicted, "stalled_connections": self.stalled}

    def admit(self, connection: _Gated, source: str) -> bool:
        """Count ``connection`` from ``source`` (it may take the place of, or later give
        its own to, another source's: :class:`~lazily_transports.AdmissionGate`); False
        when it must be closed."""
        return self.gate.admit(source, connection, connection.evict)

    def closed_stalled(self, source: str | None) -> None:
        """Count (and log, at most once per 10 s) a connection closed past the limit."""
        self.stalled += 1
        if self._stall_log.allow():
            log.warning("%s: closed a connection from %s whose reader took its answers for "
                        "more than %g s; %d closed so far", self.gate.label, source,
                        self.stall_limit, self.stalled)

    def release(self, connection: _Gated, source: str) -> None:
        """Give back ``connection``'s slot (none when it was closed to make room)."""
        self.gate.release(source, connection)


class _Gated(asyncio.Protocol):
    """One connection: admitted by the gate, then handed to the HTTP protocol."""

    def __init__(self, inner: asyncio.Protocol, connections: Connections) -> None:
        self.inner = inner
        self.connections = connections
        self.source: str | None = None
        self.admitted = False
        self._transport: asyncio.Transport | None = None
        self._stalled_for = 0.0
        self._paused_at = 0.0
        self._stall_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        source = source_of(transport)
        if not self.connections.admit(self, source):
            cast(asyncio.Transport, transport).abort()
            return
        self.source = source
        self.admitted = True
        self._transport = cast(asyncio.Transport, transport)
        self.inner.connection_made(transport)

    def evict(self) -> None:
        """Close this connection now (its slot was already given back)."""
        if self._transport is not None:
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.admitted:
            transport = self._transport
            if (self._stall_timer is None and transport is not None
                    and not transport.get_write_buffer_size()):
                self._stalled_for = 0.0  # a new request, every earlier answer taken
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self) -> None:
        if self.admitted:
            limit = self.connections.stall_limit
            if limit is not None and self._stall_timer is None:
                loop = asyncio.get_running_loop()
                self._paused_at = loop.time()
                self._stall_timer = loop.call_later(max(0.0, limit - self._stalled_for),
                                                    self._stalled)
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self._stop_stall_timer()
            self.inner.resume_writing()

    def _stop_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
            self._stalled_for += asyncio.get_running_loop().time() - self._paused_at

    def _stalled(self) -> None:
        self._stall_timer = None
        self.connections.closed_stalled(self.source)
        if self._transport is not None:
            self._transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_stall_timer()
        if self.admitted:
            if self.source is not None:
                self.connections.release(self, self.source)
                self.source = None
            self.admitted = False
            self.inner.connection_lost(exc)


#: Connections waiting to be accepted (asyncio's default).
BACKLOG = 100


async def serve(factory: Callable[[], Any], host: str, port: int,
                connections: Connections, *, start_serving: bool = True) -> asyncio.Server:
    """Listen on ``host:port`` with ``factory``'s protocols behind ``connections``. With
    ``start_serving=False`` it listens too, so no other socket can take the port, but
    accepts only from ``start_serving()``: connections wait in the backlog until then."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Gated(cast(asyncio.Protocol, factory()), connections), host, port,
        reuse_address=True, backlog=BACKLOG, start_serving=start_serving)
    if not start_serving:  # asyncio listens only from start_serving()
        try:
            for bound in server.sockets:
                with bound.dup() as listening:  # the same socket: closing the copy keeps it
                    listening.listen(BACKLOG)
        except OSError:
            server.close()  # its sockets, not left to the collector
            raise
    return server


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
