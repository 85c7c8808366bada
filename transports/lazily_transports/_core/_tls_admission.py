"""Admission of TLS connections before their handshake.

A TLS server made by ``loop.create_server(ssl=...)`` hands its protocol a connection
only once the TLS handshake is over, so connections still in their handshake (a
stranger's that never sends a ClientHello, say) escape every cap and hold a file
descriptor each until the handshake timeout. :func:`admitted_tls` instead accepts
plain TCP, admits each connection through an ``AdmissionGate`` (its peer's IP address
is the source), runs the handshake with ``loop.start_tls`` and only then hands the
secure transport to the protocol ``factory`` makes. The slot is released when the
handshake ends, either way. :class:`ServerTLS` runs that handshake for a protocol that
admitted its connection (the WebSocket listener's own as well). On uvloop, whose
``start_tls`` leaves the bytes a server connection receives with the old protocol,
:func:`admits_before_tls` is False and TLS servers keep the loop's own handshake
(connections admitted once it is over).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, cast

from ._admission import AdmissionGate, source_of

__all__ = ["ServerTLS", "admits_before_tls", "admitted_tls"]


def admits_before_tls() -> bool:
    """Whether this thread's running loop can admit TLS connections before their
    handshake (asyncio's own loops can)."""
    return isinstance(asyncio.get_running_loop(), asyncio.BaseEventLoop)


class ServerTLS:
    """The server side of one admitted connection's TLS handshake, run by its protocol
    with ``loop.start_tls`` (at most ``timeout`` seconds). ``then`` gets the secure
    transport, or ``None`` when the handshake failed or the connection closed meanwhile
    (the plain transport is then aborted). Bytes that arrive with the handshake's end,
    before ``then`` ran, wait in :meth:`hold` until :meth:`take_early`."""

    def __init__(self, raw: asyncio.Transport, protocol: asyncio.BaseProtocol,
                 context: ssl.SSLContext, timeout: float,
                 then: Callable[[asyncio.Transport | None], None]) -> None:
        self._early: list[bytes] = []
        raw.pause_reading()  # the handshake's bytes wait for start_tls
        self._task = asyncio.get_running_loop().create_task(
            self._run(raw, protocol, context, timeout, then))

    @staticmethod
    async def _run(raw: asyncio.Transport, protocol: asyncio.BaseProtocol,
                   context: ssl.SSLContext, timeout: float,
                   then: Callable[[asyncio.Transport | None], None]) -> None:
        loop = asyncio.get_running_loop()
        try:
            secure = await loop.start_tls(raw, protocol, context, server_side=True,
                                          ssl_handshake_timeout=timeout)
        except (Exception, asyncio.CancelledError):  # any failure: the slot is given back
            secure = None
        if secure is None or secure.is_closing():
            raw.abort()
            secure = None
        then(secure)

    def hold(self, data: bytes) -> None:
        """Keep ``data``, received before ``then`` ran."""
        self._early.append(data)

    def take_early(self) -> list[bytes]:
        """The bytes :meth:`hold` kept, in order (then none)."""
        early, self._early = self._early, []
        return early

    def cancel(self) -> None:
        """Stop the handshake (the connection was lost): ``then`` gets ``None``."""
        if not self._task.done():
            self._task.cancel()


class _AdmittedTLS(asyncio.Protocol):
    """One connection: admitted, secured, then relayed to the protocol ``factory`` makes."""

    def __init__(self, factory: Callable[[], Any], gate: AdmissionGate,
                 context: ssl.SSLContext, timeout: float) -> None:
        self._factory = factory
        self._gate = gate
        self._context = context
        self._timeout = timeout
        self._source: str | None = None
        self._inner: asyncio.Protocol | None = None
        self._tls: ServerTLS | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        raw = cast(asyncio.Transport, transport)
        source = source_of(raw)
        if not self._gate.admit(source, self, raw.abort):
            raw.abort()
            return
        self._source = source
        self._tls = ServerTLS(raw, self, self._context, self._timeout, self._secured)

    def _release(self) -> None:
        if self._source is not None:
            self._gate.release(self._source, self)
            self._source = None

    def _secured(self, secure: asyncio.Transport | None) -> None:
        self._release()
        if secure is None or self._tls is None:
            return
        inner = cast(asyncio.Protocol, self._factory())
        self._inner = inner
        inner.connection_made(secure)
        for data in self._tls.take_early():
            inner.data_received(data)

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)
        elif self._tls is not None:  # arrived with the end of the handshake
            self._tls.hold(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if self._tls is not None:
            self._tls.cancel()
        if self._inner is not None:
            inner, self._inner = self._inner, None
            inner.connection_lost(exc)


def admitted_tls(factory: Callable[[], Any], gate: AdmissionGate, context: ssl.SSLContext,
                 timeout: float) -> Callable[[], asyncio.Protocol]:
    """A protocol factory for a plain ``loop.create_server`` that serves TLS with
    ``context``: each connection is admitted by ``gate`` before its handshake (at most
    ``timeout`` seconds), then handed to ``factory``'s protocol."""
    return lambda: _AdmittedTLS(factory, gate, context, timeout)
