"""Caps on the connections of a node's HTTP server (status page, metrics, admin API).

HTTP has no connection-level authentication, so every connection counts against an
:class:`~lazily_transports._core._admission.AdmissionGate` for as long as it is open: at most
``max_total`` in all and ``max_per_source`` from one IP address. A connection over a
cap is closed at once (counted and logged at most once per 10 s), so strangers cannot
spend the file descriptors the node's journal, snapshots and links need.
:func:`serve` listens with the gate in front of an aiohttp runner's protocol factory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from lazily_transports._core._admission import AdmissionGate


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


async def serve(factory: Callable[[], Any], host: str, port: int, gate: AdmissionGate
                ) -> asyncio.Server:
    """Listen on ``host:port`` with ``factory``'s protocols behind ``gate``."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: _Gated(cast(asyncio.Protocol, factory()), gate), host, port,
        reuse_address=True)
