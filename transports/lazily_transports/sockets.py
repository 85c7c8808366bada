"""Unix-domain (``unix:///path``, ``unix:relpath``), TCP (``tcp://host:port``) and TCP with
TLS (``tls://host:port``, given SSL contexts: see :mod:`lazily_transports.tls`) links;
their addresses are parsed by :mod:`lazily_transports.socket_addresses`, and
:mod:`lazily_transports.socket_listener` holds their listening sockets.

Frames are length-prefixed (see ``framing``). Queued frames are coalesced into one
``write`` per event-loop iteration (or written at once by ``flush``) and incoming chunks
are split into frames in one pass, so the cost per frame is a few list operations, not a
system call.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import socket
import ssl
from collections.abc import Callable, Hashable, Sequence
from typing import cast

import anyio

from ._core._admission import AdmissionGate, accept_backlog
from ._core._buffered import BufferedChannel
from ._core._framing import FrameDecoder, frame_header
from ._core._lookups import connected_socket
from ._core._reads import read_buffer
from ._core._reservation import FrameReservation
from ._core._tls_admission import admits_before_tls, admitted_tls
from .abc import AddressInfo, ChannelAcceptor, DataChannel, HostTransport, Listener
from .config import LinkConfig
from .errors import HTTP_HINT, FrameTooLargeError, LinkBrokenError
from .frame_budget import FrameBudget
from .socket_addresses import (
    check_tls,
    format_tcp,
    parse_tcp,
    parse_unix,
    reclaim_unix_path,
    unix_peer_source,
)
from .socket_listener import SocketListener
from .tls import PeerCertificate, peer_certificate_of

__all__ = ["SocketChannel", "SocketListener", "SocketTransport", "parse_tcp", "parse_unix"]

logger = logging.getLogger("lazily_transports.sockets")
#: The length prefixes an HTTP server's answer reads as: its status line's first bytes
#: (``HTTP``), or its error page's where it answers an unreadable request line without one
#: (as Python's ``http.server`` does).
_HTTP_PREFIXES = frozenset(int.from_bytes(start, "big") for start in (b"HTTP", b"<!DO", b"<!do",
                                                                       b"<htm", b"<HTM"))

#: Flush inline (instead of at the end of the loop iteration) past this many bytes.
_EAGER_FLUSH = 256 * 1024
_CLOSE_GRACE = 1.0


class SocketChannel(BufferedChannel, asyncio.BufferedProtocol):
    """A DataChannel over a stream socket; it is its own asyncio protocol (reading into
    its thread's shared buffer, see :mod:`._core._reads`)."""

    def __init__(
        self,
        config: LinkConfig,
        remote_address: str,
        scheme: str,
        on_connected: Callable[[SocketChannel], None] | None = None,
    ) -> None:
        BufferedChannel.__init__(
            self,
            receive_buffer_size=config.receive_buffer_size,
            send_buffer_size=config.send_buffer_size,
            remote_address=remote_address,
        )
        self.scheme = scheme  # type: ignore[misc]
        self._decoder = FrameDecoder(self.max_frame_size)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._on_connected = on_connected
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._flush_scheduled = False
        self._write_paused = False
        self._gone: asyncio.Future[None] = self._loop.create_future()
        self._reservation: FrameReservation | None = None
        self._budget_paused = False
        #: :attr:`sent_bytes` as it stood when :meth:`_abort` dropped the rest.
        self._sent_at_abort: int | None = None

    # -- asyncio.BufferedProtocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self._transport = transport
        transport.set_write_buffer_limits(high=self._send_buffer_size)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            peer = transport.get_extra_info("peername")
            if peer:
                self.source = str(peer[0])
                if self._on_connected is not None:  # accepted: name the dialer, not us
                    self.remote_address = format_tcp(peer, self.scheme)
        elif (sock is not None and sock.family == socket.AF_UNIX
              and self._on_connected is not None):  # accepted: who connected
            self.source = unix_peer_source(sock, self.remote_address)
        if self._on_connected is not None:
            self._on_connected(self)
            self._on_connected = None

    def get_buffer(self, sizehint: int) -> memoryview:
        return read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(read_buffer()[:nbytes]))

    def data_received(self, data: bytes) -> None:
        """Bytes read from the socket (also what a wrapping protocol hands over)."""
        self.received_bytes += len(data)
        decoder = self._decoder
        decoder.max_frame_size = self.max_frame_size
        try:
            frames = decoder.feed(data)
        except FrameTooLargeError as exc:
            self._fail(
                f"peer announced a frame of {exc.size} bytes, above the maximum frame size "
                f"of {exc.limit} bytes" + (HTTP_HINT if exc.size in _HTTP_PREFIXES else ""),
                violation=True,
            )
            return
        reservation = self._reservation
        if reservation is not None and reservation.update(bool(frames), decoder.expected()):
            self._budget_paused = True
            self._pause_reading()
        if not frames or self._closed:
            return
        self._rx.extend(frames)
        self._rx_added += decoder.payload_bytes
        if self._rx_hook is not None:
            self._rx_hook()
        if self._rx_waiters and self._rx:
            self._wake_receivers()
        if not self._rx_paused and self._rx_added - self._rx_taken >= self._rx_limit:
            self._rx_paused = True
            self._pause_reading()

    def eof_received(self) -> bool:
        if self._decoder.pending:
            self._fail(self._truncation())
            return False
        self._deliver_eof()
        return self.scheme != "tls"  # TLS cannot half-close: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        if self._reservation is not None:
            self._reservation.drop()
        if self._decoder.pending and not self._closed:
            self._fail(self._truncation())
        elif exc is not None:
            self._fail(f"connection lost: {exc}")
        self._connection_gone()
        self._transport = None
        if not self._gone.done():
            self._gone.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._tx_waiters:
            self._wake_senders()

    def _truncation(self) -> str:
        expected = self._decoder.expected()
        got = self._decoder.pending
        if expected is None:
            return f"truncated frame: connection ended inside a frame header ({got} of 4 bytes)"
        return f"truncated frame: connection ended after {got} of {expected} bytes"

    def peer_certificate(self) -> PeerCertificate | None:
        transport = self._transport
        if self.scheme != "tls" or transport is None:
            return None
        return peer_certificate_of(transport.get_extra_info("ssl_object"))

    # -- frame budget ------------------------------------------------------------------------

    @property
    def budget_waiting_since(self) -> float | None:
        return None if self._reservation is None else self._reservation.since

    def use_frame_budget(self, budget: FrameBudget, owner: Hashable = None) -> bool:
        self._reservation = FrameReservation(budget, self._budget_granted, owner)
        if self._reservation.update(False, self._decoder.expected()):
            self._budget_paused = True
            self._pause_reading()
        return True

    def _budget_granted(self) -> None:
        self._budget_paused = False
        if not self._rx_paused:
            self._resume_reading()

    # -- BufferedChannel hooks ---------------------------------------------------------------

    def set_receive_hook(self, hook: Callable[[], None] | None) -> bool:
        self._rx_hook = hook
        return True

    def _pause_reading(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._budget_paused:  # its frame waits for room in the budget
            return
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    @property
    def sent_bytes(self) -> int:
        """Bytes taken (4 a frame for its length) less those still queued here or in the
        connection's write buffer (over TLS only the former: that buffer mixes plain and
        encrypted bytes); all of them once the connection is gone, but for those an
        abort dropped."""
        if self._sent_at_abort is not None:
            return self._sent_at_abort
        sent = self.accepted_bytes - self._pending_bytes
        transport = self._transport
        if transport is not None and self.scheme != "tls":
            sent -= transport.get_write_buffer_size()
        return sent

    def abort(self) -> None:
        if self._closed:
            return
        self._abort()
        self._mark_closed()

    def _abort(self) -> None:
        if self._sent_at_abort is None:
            self._sent_at_abort = self.sent_bytes
        if self._reservation is not None:
            self._reservation.drop()
        self._pending.clear()
        self._pending_bytes = 0
        if self._transport is not None:
            self._transport.abort()

    def _writable(self) -> bool:
        return not self._write_paused and self._pending_bytes < self._send_buffer_size

    # -- sending -----------------------------------------------------------------------------

    def _send_frame_nowait(self, frame: bytes) -> None:
        if self._queue(frame) and not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def send_held(self, item: bytes) -> None:
        if type(item) is not bytes or len(item) > self.max_frame_size:
            self.send_nowait(item)  # converts it, or refuses it as too large
            return
        self._queue(item)

    def _queue(self, frame: bytes) -> bool:
        """Queue one size-checked frame; True while it waits for a flush."""
        if self._reason is not None or self._eof_sent or self._send_dead is not None:
            raise self._send_error() or LinkBrokenError("link is down")
        if self._write_paused or self._pending_bytes >= self._send_buffer_size:
            raise anyio.WouldBlock
        pending = self._pending
        pending.append(frame_header(len(frame)))
        pending.append(frame)
        self._pending_bytes += len(frame) + 4
        self.accepted_bytes += len(frame) + 4
        if self._pending_bytes >= _EAGER_FLUSH:
            self._flush()
            return False
        return True

    def flush(self) -> None:
        self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.write(data)
        if self._tx_waiters and not self._write_paused:
            self._wake_senders()

    async def send_eof(self) -> None:
        if self._eof_sent or self._closed:
            return
        self._flush()
        self._eof_sent = True
        self._wake_senders()
        transport = self._transport
        if transport is not None and transport.can_write_eof() and not transport.is_closing():
            transport.write_eof()

    async def aclose(self) -> None:
        self._flush()
        if not self._mark_closed():
            return
        transport = self._transport
        if transport is None:
            return
        transport.close()
        with anyio.CancelScope(shield=True):
            try:
                await asyncio.wait_for(asyncio.shield(self._gone), _CLOSE_GRACE)
            except TimeoutError:
                transport.abort()


class SocketTransport(HostTransport):
    """Transport for ``unix:``, ``tcp:`` and ``tls:`` addresses."""

    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        return await self._connect(address, config, None, ssl_context)

    async def connect_to(
        self, address: str, config: LinkConfig, found: Sequence[AddressInfo], *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> DataChannel:
        return await self._connect(address, config, found, ssl_context)

    async def _connect(self, address: str, config: LinkConfig,
                       found: Sequence[AddressInfo] | None,
                       ssl_context: ssl.SSLContext | None) -> DataChannel:
        tls = check_tls(address, ssl_context, listening=False)
        loop = asyncio.get_running_loop()
        if address.startswith("unix:"):
            path = parse_unix(address)
            channel = SocketChannel(config, address, "unix")
            await loop.create_unix_connection(lambda: channel, path)
        else:
            host, port = parse_tcp(address, listening=False)
            channel = SocketChannel(config, address, "tls" if tls else "tcp")
            start = functools.partial(loop.create_connection, lambda: channel,
                                      ssl=ssl_context if tls else None,
                                      server_hostname=host if tls else None,
                                      ssl_handshake_timeout=(
                                          config.handshake_timeout if tls else None))
            if found is None:
                await start(host, port)
            else:  # the addresses the dial looked the host up to
                await start(sock=await connected_socket(found))
        return channel

    async def listen(
        self,
        address: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Listener:
        tls = check_tls(address, ssl_context, listening=True)
        loop = asyncio.get_running_loop()
        if address.startswith("unix:"):
            path = parse_unix(address)
            reclaim_unix_path(path)
            try:
                server = await loop.create_unix_server(
                    lambda: SocketChannel(config, f"{address}#peer", "unix", accept), path,
                    backlog=accept_backlog(config),
                )
            except FileNotFoundError:  # the bare OSError names no path
                raise FileNotFoundError(errno.ENOENT, f"cannot listen on {address}: directory "
                                        f"{os.path.dirname(path) or '.'} does not exist") from None
            return SocketListener(server, address, path)
        host, port = parse_tcp(address, listening=True)
        scheme = "tls" if tls else "tcp"

        def channel() -> SocketChannel:
            return SocketChannel(config, f"{address}#peer", scheme, accept)

        handshakes = None
        if tls and admits_before_tls():
            assert ssl_context is not None
            handshakes = AdmissionGate(config.max_pending_handshakes,
                                       config.max_pending_per_source,
                                       label=f"{address} (TLS handshake)")
            gated = admitted_tls(channel, handshakes, ssl_context, config.handshake_timeout)
            server = await loop.create_server(gated, host, port, backlog=accept_backlog(config))
        else:
            server = await loop.create_server(
                channel, host, port, ssl=ssl_context if tls else None,
                backlog=accept_backlog(config),
                ssl_handshake_timeout=config.handshake_timeout if tls else None)
        bound = format_tcp(server.sockets[0].getsockname(), scheme)
        listener = SocketListener(server, bound, None)
        listener.handshakes = handshakes
        return listener

