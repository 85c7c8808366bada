"""WebSocket server connections admitted through an ``AdmissionGate`` until their HTTP
upgrade ends, and over ``wss://`` from before their TLS handshake."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, cast

from websockets.asyncio.server import ServerConnection

from ._admission import AdmissionGate, source_of
from ._tls_admission import ServerTLS, admits_before_tls

__all__ = ["GatedConnection", "gated_connection", "tls_arguments"]


class GatedConnection(ServerConnection):
    """A server connection holding a pending slot of ``gate`` until its HTTP upgrade ends
    (``release_slot``, or the connection's end); over the gate's caps it is closed at once.
    With ``tls`` it runs the TLS handshake itself (at most ``tls_timeout`` seconds), so a
    connection in its handshake holds a slot too."""

    gate: AdmissionGate
    tls: ssl.SSLContext | None = None
    tls_timeout = 5.0
    _source = ""
    _held = False
    _made = False
    _securing: ServerTLS | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._source = source_of(transport)
        self._held = self.gate.admit(self._source, self,
                                     cast(asyncio.Transport, transport).abort)
        if self.tls is None:
            self._made = True
            super().connection_made(transport)
            if not self._held:
                cast(asyncio.Transport, transport).abort()
            return
        raw = cast(asyncio.Transport, transport)
        if not self._held:
            raw.abort()
            return
        self._securing = ServerTLS(raw, self, self.tls, self.tls_timeout, self._secured)

    def _secured(self, secure: asyncio.Transport | None) -> None:
        if secure is None or self._securing is None:
            self.release_slot()
            return
        self._made = True
        super().connection_made(secure)
        for data in self._securing.take_early():
            super().data_received(data)

    def data_received(self, data: bytes) -> None:
        if self._made:
            super().data_received(data)
        elif self._securing is not None:  # arrived with the end of the handshake
            self._securing.hold(data)

    def eof_received(self) -> None:
        if self._made:
            super().eof_received()

    def pause_writing(self) -> None:
        if self._made:
            super().pause_writing()

    def resume_writing(self) -> None:
        if self._made:
            super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.release_slot()
        if self._made:
            super().connection_lost(exc)
        elif self._securing is not None:
            self._securing.cancel()

    def release_slot(self) -> None:
        if self._held:
            self._held = False
            self.gate.release(self._source, self)


def gated_connection(gate: AdmissionGate, tls: ssl.SSLContext | None = None,
                     tls_timeout: float = 5.0) -> type[GatedConnection]:
    """A ``create_connection`` class for ``serve`` whose connections ``gate`` admits;
    with ``tls`` they run their TLS handshake themselves where the loop allows it (pass
    ``serve`` the :func:`tls_arguments` of the same context)."""
    own = tls if admits_before_tls() else None
    return type("GatedConnection", (GatedConnection,),
                {"gate": gate, "tls": own, "tls_timeout": tls_timeout})


def tls_arguments(tls: ssl.SSLContext | None) -> dict[str, Any]:
    """``serve``'s ``ssl`` argument for connections made by ``gated_connection(gate, tls)``:
    none where they run their handshake themselves."""
    return {"ssl": None if tls is None or admits_before_tls() else tls}
