"""WebSocket links (``ws://host:port/path``, ``wss://...``, parsed by
:mod:`lazily_transports.websocket_addresses`): one binary message per frame.

Built on ``websockets.asyncio`` with compression off. ``wss://`` listeners need a
server ``ssl.SSLContext``; dialers may pass a client context (default: the system's).
Until the peer is authenticated a connection accepts messages of at most
``HANDSHAKE_FRAME_LIMIT`` bytes (websockets checks each frame header), about one queued
before reading pauses; a listener holds connections still in their HTTP upgrade to the
same caps as pending handshakes and to ``handshake_timeout``, from before their TLS
handshake on ``wss://``.

``received_bytes`` grows while a large frame arrives, as on the other transports
(websockets hands over whole messages only): the bytes of a chunk read from the socket
that leaves a frame not yet whole, or a message in fragments under way, count at once
(a message sent as many small fragments progresses with each), and a message's bytes
not counted so far when it is delivered. Frames whole within one chunk outside a
message (pings, pongs) count nothing.

Reading pauses when the channel's receive queue is full, as on the other transports
(messages websockets assembled go to that queue at once, not left in websockets' own,
which would hold 64 whole messages more). A connection follows the frame headers it
reads (:mod:`._core._ws_frames`), so a :class:`~lazily_transports.FrameBudget` counts a
message still arriving from its header on: its frame's size (any frame's: websockets
holds a ping as whole as a message), or the largest message (``max_frame_size``) for one
in fragments, whose size is not announced; nothing once websockets stops parsing frames
or sent a close frame (failing the connection does).

Keepalive pings are sent (for proxies that close quiet connections) but a missing pong
never closes a link: the peer's pong waits behind a frame of its still arriving, so a
frame taking longer than websockets' ping timeout (20 s) would be cut though its bytes
keep coming. The links' users judge silence themselves (Raft heartbeats; a member's
idle rule and a client's pings on client links).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from collections.abc import Hashable, Sequence
from http import HTTPStatus
from urllib.parse import urlsplit
from urllib.request import getproxies

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
)
from websockets.http11 import Request, Response

from ._core._admission import AdmissionGate, QuietServerLog, accept_backlog
from ._core._buffered import BufferedChannel, Signal
from ._core._gated import GatedConnection, gated_connection, tls_arguments
from ._core._handshake import HANDSHAKE_FRAME_LIMIT
from ._core._lookups import connected_socket
from ._core._ws_flow import Counting, CountingClientConnection, WsReading, counting
from ._core._ws_refusals import http_answer
from .abc import AddressInfo, ChannelAcceptor, DataChannel, HostTransport, Listener
from .config import LinkConfig
from .errors import HTTP_HINT, HandshakeError, LinkBrokenError
from .frame_budget import FrameBudget
from .tls import PeerCertificate, peer_certificate_of
from .websocket_addresses import check_tls, parse_websocket

__all__ = ["WebSocketChannel", "WebSocketListener", "WebSocketTransport", "parse_websocket"]

logger = logging.getLogger("lazily_transports.websocket")

_CLOSE_TIMEOUT = 1.0
_MAX_QUEUE = 64
#: Incoming WebSocket frames queued before reading pauses, until the peer is authenticated.
_HANDSHAKE_QUEUE = 2


class WebSocketChannel(BufferedChannel):
    """A DataChannel over one WebSocket connection."""

    def __init__(
        self,
        connection: ClientConnection | ServerConnection,
        config: LinkConfig,
        remote_address: str,
        scheme: str,
        source: str = "",
    ) -> None:
        super().__init__(
            receive_buffer_size=config.receive_buffer_size,
            send_buffer_size=config.send_buffer_size,
            remote_address=remote_address,
            source=source,
        )
        self.scheme = scheme  # type: ignore[misc]
        self._ws = connection
        self._outbox: deque[bytes] = deque()
        self._outbox_bytes = 0
        self._writer_wakeup: Signal | None = None
        self._reading = WsReading(connection, lambda: self._rx_paused, lambda: self._closed,
                                  lambda: self.max_frame_size)
        loop = asyncio.get_running_loop()
        self._finished: asyncio.Future[None] = loop.create_future()
        #: Bytes counted in ``received_bytes`` for frames not yet delivered.
        self._ahead = 0
        self._count_partial_frames()
        self._reader = loop.create_task(self._read())
        self._writer = loop.create_task(self._write())

    def _count_partial_frames(self) -> None:
        """Count the bytes of what is still arriving as they come (module docstring)."""
        connection = self._ws
        buffer = getattr(getattr(connection.protocol, "reader", None), "buffer", None)
        if not isinstance(connection, Counting):
            return
        counts = isinstance(buffer, bytearray)  # else another websockets: whole
        frames = connection.frames  # messages count when delivered

        def chunk_read(data: bytes, ended: bool) -> None:
            if counts and (buffer or (frames is not None and frames.arriving)):
                self.received_bytes += len(data)  # a frame or message is arriving
                self._ahead += len(data)
            self._reading.chunk_done(ended)

        connection.chunk_read = chunk_read

    # -- frame budget ------------------------------------------------------------------------

    @property
    def budget_waiting_since(self) -> float | None:
        return self._reading.waiting_since

    def use_frame_budget(self, budget: FrameBudget, owner: Hashable = None) -> bool:
        return self._reading.use_budget(budget, owner)

    def peer_certificate(self) -> PeerCertificate | None:
        transport = self._ws.transport
        if self.scheme != "wss" or transport is None:
            return None
        return peer_certificate_of(transport.get_extra_info("ssl_object"))

    # -- receiving ----------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for message in self._ws:
                counted = min(self._ahead, len(message))
                self._ahead -= counted
                self.received_bytes += len(message) - counted
                if not isinstance(message, bytes):
                    self._fail("peer sent a text message; links carry binary frames only",
                               violation=True)
                    return
                if len(message) > self.max_frame_size:
                    self._fail(
                        f"peer sent a frame of {len(message)} bytes, above the maximum frame "
                        f"size of {self.max_frame_size} bytes",
                        violation=True,
                    )
                    return
                if self._closed:
                    continue  # dropped: drain what the closing handshake reads
                self._deliver(message)
            self._connection_gone()
        except ConnectionClosedOK:
            self._connection_gone()
        except ConnectionClosed as exc:
            self._fail(_describe_close(exc))
        finally:
            self._reading.drop()
            if not self._finished.done():
                self._finished.set_result(None)

    def open_limits(self, max_frame_size: int, receive_buffer_size: int) -> None:
        super().open_limits(max_frame_size, receive_buffer_size)
        self._ws.protocol.max_message_size = max_frame_size
        self._ws.recv_messages.high = _MAX_QUEUE
        self._ws.recv_messages.low = _MAX_QUEUE // 4

    def _pause_reading(self) -> None:
        self._reading.sync()

    def _resume_reading(self) -> None:
        self._reading.sync()

    # -- sending ------------------------------------------------------------------------

    def _send_frame_nowait(self, frame: bytes) -> None:
        if self._reason is not None or self._eof_sent or self._send_dead is not None:
            raise self._send_error() or LinkBrokenError("link is down")
        if self._outbox_bytes >= self._send_buffer_size:
            raise anyio.WouldBlock
        self._outbox.append(frame)
        self._outbox_bytes += len(frame)
        wakeup = self._writer_wakeup
        if wakeup is not None:
            self._writer_wakeup = None
            wakeup.fire()

    def _writable(self) -> bool:
        return self._outbox_bytes < self._send_buffer_size

    async def _write(self) -> None:
        outbox = self._outbox
        ws = self._ws
        try:
            while True:
                while outbox:
                    frame = outbox[0]
                    await ws.send(frame)
                    outbox.popleft()
                    self._outbox_bytes -= len(frame)
                    if self._tx_waiters:
                        self._wake_senders()
                if self._eof_sent or self._closed:
                    return
                wakeup = self._writer_wakeup = Signal()
                if not outbox:
                    await wakeup.wait()
        except ConnectionClosed as exc:
            if not self._closed:
                self._fail(_describe_close(exc))

    def _abort(self) -> None:
        self._reading.drop()
        self._outbox.clear()
        self._outbox_bytes = 0
        transport = self._ws.transport
        if transport is not None:
            transport.abort()

    def _poke_writer(self) -> None:
        wakeup = self._writer_wakeup
        if wakeup is not None:
            self._writer_wakeup = None
            wakeup.fire()

    async def send_eof(self) -> None:
        """WebSockets cannot half-close: flush queued frames, then close the connection."""
        if self._eof_sent or self._closed:
            return
        self._eof_sent = True
        self._wake_senders()
        await self._finish_writing()
        await self._ws.close()

    async def _finish_writing(self) -> None:
        self._poke_writer()
        with anyio.move_on_after(_CLOSE_TIMEOUT):
            await asyncio.wait((self._writer,))

    async def aclose(self) -> None:
        if self._closed:
            return
        with anyio.CancelScope(shield=True):
            if self._reason is None and not self._eof_sent:
                self._eof_sent = True
                await self._finish_writing()
            self._mark_closed()
            self._reading.drop()
            self._writer.cancel()
            self._reading.sync()  # the closing handshake is read
            try:
                await self._ws.close()
            except Exception:  # the connection is being torn down either way
                pass
            with anyio.move_on_after(_CLOSE_TIMEOUT):
                await asyncio.wait((self._reader,))
            self._reader.cancel()
            if not self._finished.done():
                self._finished.set_result(None)

    async def wait_finished(self) -> None:
        """Return once the connection ended (read side done or channel closed)."""
        await asyncio.shield(self._finished)


def _describe_close(exc: ConnectionClosed) -> str:
    frame = exc.rcvd or exc.sent
    if frame is None:
        return "connection lost without a closing handshake"
    detail = f": {frame.reason}" if frame.reason else ""
    return f"websocket closed with code {frame.code}{detail}"


class WebSocketListener(Listener):
    """A WebSocket server; ``upgrades`` caps connections still in their HTTP upgrade."""

    upgrades: AdmissionGate | None = None

    def __init__(self, server: Server, address: str) -> None:
        self._server = server
        self._address = address

    @property
    def address(self) -> str:
        return self._address

    async def aclose(self) -> None:
        self._server.close(close_connections=False)


class WebSocketTransport(HostTransport):
    """Transport for ``ws:`` and ``wss:`` addresses."""

    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        return await self._connect(address, config, None, ssl_context)

    async def connect_to(
        self, address: str, config: LinkConfig, found: Sequence[AddressInfo], *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> DataChannel:
        """As :meth:`connect`; with a proxy set in the environment (which ``websockets``
        may dial through) the host name is left to it."""
        return await self._connect(address, config, None if getproxies() else found,
                                   ssl_context)

    async def _connect(self, address: str, config: LinkConfig,
                       found: Sequence[AddressInfo] | None,
                       ssl_context: ssl.SSLContext | None) -> DataChannel:
        scheme, _host, _port, _path = parse_websocket(address, listening=False)
        check_tls(scheme, ssl_context, listening=False)
        sock = None if found is None else await connected_socket(found)
        try:
            ws = await connect(
                address,
                sock=sock,
                ssl=ssl_context if scheme == "wss" else None,
                compression=None,
                max_size=HANDSHAKE_FRAME_LIMIT,
                max_queue=_HANDSHAKE_QUEUE,
                write_limit=config.send_buffer_size,
                close_timeout=_CLOSE_TIMEOUT,
                ping_timeout=None,
                open_timeout=None,
                create_connection=CountingClientConnection,
            )
        except InvalidHandshake as exc:
            answered = http_answer(exc)
            if answered is not None:
                raise HandshakeError("handshake", f"WebSocket upgrade to {address} answered "
                                     f"{answered}{HTTP_HINT}") from exc
            raise ConnectionError(f"WebSocket upgrade to {address} failed: {exc}") from exc
        return WebSocketChannel(ws, config, address, scheme)

    async def listen(
        self,
        address: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Listener:
        scheme, host, port, path = parse_websocket(address, listening=True)
        check_tls(scheme, ssl_context, listening=True)

        def route(connection: ServerConnection, request: Request) -> Response | None:
            if urlsplit(request.path).path != path:
                return connection.respond(
                    HTTPStatus.NOT_FOUND, f"no link endpoint at {request.path}\n"
                )
            return None

        upgrades = AdmissionGate(
            config.max_pending_handshakes,
            config.max_pending_per_source,
            label=f"{address} (HTTP upgrade)",
        )

        async def handler(connection: ServerConnection) -> None:
            peer = connection.remote_address
            remote = f"{scheme}://{peer[0]}:{peer[1]}" if peer else f"{address}#peer"
            source = str(peer[0]) if peer else remote
            if isinstance(connection, GatedConnection):
                connection.release_slot()
            channel = WebSocketChannel(connection, config, remote, scheme, source)
            accept(channel)
            await channel.wait_finished()

        server = await serve(
            handler,
            host,
            port,
            process_request=route,
            compression=None,
            max_size=HANDSHAKE_FRAME_LIMIT,
            max_queue=_HANDSHAKE_QUEUE,
            write_limit=config.send_buffer_size,
            close_timeout=_CLOSE_TIMEOUT,
            ping_timeout=None,
            open_timeout=config.handshake_timeout,
            backlog=accept_backlog(config),
            create_connection=counting(gated_connection(upgrades, ssl_context,
                                                         config.handshake_timeout)),
            **tls_arguments(ssl_context),
            logger=QuietServerLog("lazily_transports.websocket.server"),
        )
        sockname = next(iter(server.sockets)).getsockname()
        bound_host = f"[{sockname[0]}]" if ":" in sockname[0] else sockname[0]
        listener = WebSocketListener(server, f"{scheme}://{bound_host}:{sockname[1]}{path}")
        listener.upgrades = upgrades
        return listener

