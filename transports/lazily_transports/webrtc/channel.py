"""``WebRTCChannel``: a DataChannel over one ordered, reliable aiortc data channel.

Every data-channel message costs aiortc at least one datagram and a trip through
its SCTP stack, so frames are not sent one per message. Each frame becomes a record
``u32 big-endian length || payload`` appended to one byte stream, and the stream is
cut into binary messages of at most ``MESSAGE_SIZE`` bytes: small frames sent in the
same event-loop turn share a message, large frames span several. The channel is
ordered and reliable, so the receiver reassembles records across message boundaries.

aiortc cannot pause an incoming data channel, so flow control is ours, in text
messages on the same channel: ``"window N"`` announces how many unread payload
bytes the receiver buffers (``INITIAL_WINDOW`` until announced), ``"ack N"``
reports the total payload bytes its reader has consumed, and the sender waits
while ``sent - acked >= window``. ``"eof"`` ends our direction (``send_eof``).
A record above the receive ceiling, more unread bytes than the window allows, a
malformed control message or a stream that ends inside a record breaks the link.
Until the peer is authenticated the window and the ceiling are the handshake's
(``INITIAL_WINDOW``, 64 KiB frames).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any

import anyio
from aiortc import RTCDataChannel, RTCPeerConnection

from .._core._buffered import BufferedChannel
from ..config import LinkConfig
from ..errors import LinkBrokenError

__all__ = ["INITIAL_WINDOW", "MESSAGE_SIZE", "PROTOCOL", "WebRTCChannel"]

_log = logging.getLogger("lazily_transports.webrtc")

PROTOCOL = "lazily-frames/1"
"""Data-channel subprotocol name of this record framing."""
MESSAGE_SIZE = 16 * 1024
"""Largest data-channel message we send."""

INITIAL_WINDOW = 64 * 1024
"""Unread payload bytes a sender may have outstanding before the window announcement."""

_HEADER = struct.Struct(">I")
_EOF = "eof"
_MAX_WINDOW = 2**32 - 1
_CLOSE_TIMEOUT = 2.0


def _remote_ip(pc: RTCPeerConnection) -> str | None:
    """The remote address of the connection's selected ICE pair, when aiortc exposes it."""
    try:
        ice: Any = pc.sctp.transport.transport  # type: ignore[union-attr]
        pairs = ice._connection._nominated
        return str(pairs[min(pairs)].remote_addr[0])
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        return None



async def close_peer_connection(pc: RTCPeerConnection) -> None:
    """Close ``pc``; a cancelled caller does not cancel the close itself.

    aiortc's concurrent ``close()`` calls wait on one shared future, and its own close
    (started when DTLS ends) fails if a cancelled waiter cancelled that future first.
    """
    try:
        await asyncio.shield(pc.close())
    except Exception as exc:  # aiortc may refuse mid-teardown; the link is gone either way
        _log.debug("closing the peer connection failed: %r", exc)

class WebRTCChannel(BufferedChannel):
    """One end of a WebRTC link; owns its ``RTCPeerConnection``."""

    scheme = "webrtc"

    def __init__(
        self,
        pc: RTCPeerConnection,
        dc: RTCDataChannel,
        config: LinkConfig,
        remote_address: str,
    ) -> None:
        super().__init__(
            receive_buffer_size=config.receive_buffer_size,
            send_buffer_size=config.send_buffer_size,
            remote_address=remote_address,
            source=_remote_ip(pc) or remote_address,
        )
        self._pc = pc
        self._dc = dc
        self._loop = asyncio.get_running_loop()
        self._out: list[bytes] = []
        self._out_size = 0
        self._flush_handle: asyncio.Handle | None = None
        self._partial = bytearray()
        self._eof_sent = False
        self._remote_closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._sent = 0  # payload bytes accepted by send
        self._peer_acked = 0  # payload bytes the peer's reader consumed
        self._peer_window = INITIAL_WINDOW
        self._window = min(config.receive_buffer_size, INITIAL_WINDOW)
        self._consumed = 0  # payload bytes our reader consumed
        self._acked = 0  # the last total we reported
        self._ack_step = max(self._window // 4, 1)
        dc.bufferedAmountLowThreshold = max(config.send_buffer_size // 2, 1)
        dc.on("message", self._on_message)
        dc.on("close", self._on_dc_close)
        dc.on("bufferedamountlow", self._wake_senders)
        pc.on("connectionstatechange", self._on_state)
        if dc.readyState == "open":
            self._announce()
        else:
            dc.on("open", self._announce)

    def _announce(self) -> None:
        if self._window != INITIAL_WINDOW:
            self._control(f"window {self._window}")

    def open_limits(self, max_frame_size: int, receive_buffer_size: int) -> None:
        super().open_limits(max_frame_size, receive_buffer_size)
        if receive_buffer_size != self._window:
            self._window = receive_buffer_size
            self._ack_step = max(self._window // 4, 1)
            self._announce()

    def _control(self, message: str) -> None:
        if self._dc.readyState == "open":
            try:
                self._dc.send(message)
            except Exception as exc:  # the channel is closing under us
                _log.debug("control message %r not sent: %r", message, exc)

    @property
    def opened(self) -> bool:
        return bool(self._dc.readyState == "open")

    # -- send side ----------------------------------------------------------------------

    def _writable(self) -> bool:
        return bool(
            self._sent - self._peer_acked < self._peer_window
            and self._out_size + self._dc.bufferedAmount < self._send_buffer_size
        )

    def _send_frame_nowait(self, frame: bytes) -> None:
        error = self._send_error()
        if error is not None:
            raise error
        if self._eof_sent:
            raise anyio.ClosedResourceError
        if self._remote_closed:
            raise LinkBrokenError("closed by peer")
        if not self._writable():
            raise anyio.WouldBlock
        self._out.append(_HEADER.pack(len(frame)))
        self._out.append(frame)
        self._out_size += _HEADER.size + len(frame)
        self._sent += len(frame)
        if self._out_size >= MESSAGE_SIZE:
            self._flush(whole_messages_only=True)
        if self._out and self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self, whole_messages_only: bool = False) -> None:
        """Cut the pending records into messages and hand them to aiortc."""
        if not whole_messages_only:
            self._flush_handle = None
        if not self._out:
            return
        data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        end = len(data) - len(data) % MESSAGE_SIZE if whole_messages_only else len(data)
        self._out = [data[end:]] if end < len(data) else []
        self._out_size = len(data) - end
        if self._dc.readyState != "open":
            if self._reason is None:
                self._fail(f"data channel is {self._dc.readyState}")
            return
        try:
            for start in range(0, end, MESSAGE_SIZE):
                self._dc.send(data[start : start + MESSAGE_SIZE])
        except Exception as exc:  # aiortc raises InvalidStateError once the channel closes
            self._fail(f"data channel send failed: {exc!r}")

    async def send_eof(self) -> None:
        if self._eof_sent or self._reason is not None:
            return
        self._flush()
        self._eof_sent = True
        self._wake_senders()
        if self._dc.readyState == "open":
            self._dc.send(_EOF)

    # -- receive side -------------------------------------------------------------------

    def _on_message(self, message: bytes | str) -> None:
        if self._reason is not None:
            return
        if isinstance(message, str):
            self._on_control(message)
            return
        self.received_bytes += len(message)
        if self._eof:
            self._fail("the peer sent data after its end of stream", violation=True)
            return
        data: bytes | bytearray = message
        if self._partial:
            self._partial += message
            data = self._partial
        pos, size, limit = 0, len(data), self.max_frame_size
        # A sender stops while a window's worth is unacknowledged, so one frame at most
        # can go beyond it.
        allowed = max(self._window, INITIAL_WINDOW) + limit
        while size - pos >= _HEADER.size:
            (length,) = _HEADER.unpack_from(data, pos)
            if length > limit:
                self._fail(f"peer sent a {length}-byte frame; the limit is {limit}",
                           violation=True)
                return
            if self._rx_added - self._rx_taken + length > allowed:
                self._fail("the peer sent more than its flow-control window allows",
                           violation=True)
                return
            end = pos + _HEADER.size + length
            if end > size:
                break
            self._deliver(bytes(data[pos + _HEADER.size : end]))
            pos = end
        if data is self._partial:
            del self._partial[:pos]
        elif pos < size:
            self._partial += data[pos:]

    def _on_control(self, message: str) -> None:
        verb, _, argument = message.partition(" ")
        if verb == _EOF and not argument:
            if self._partial:
                self._fail("the peer ended its stream inside a frame")
            else:
                self._deliver_eof()
            return
        digits = argument.isascii() and argument.isdigit() and len(argument) <= 20
        value = int(argument) if digits else -1
        if verb == "ack" and self._peer_acked <= value <= self._sent:
            self._peer_acked = value
        elif verb == "window" and 0 < value <= _MAX_WINDOW:
            self._peer_window = value
        else:
            self._fail(f"unexpected control message {message[:40]!r} on the data channel",
                       violation=True)
            return
        if self._tx_waiters and self._writable():
            self._wake_senders()

    def receive_nowait(self) -> bytes:
        frame = super().receive_nowait()
        self._consumed += len(frame)
        if self._consumed - self._acked >= self._ack_step:
            self._acked = self._consumed
            self._control(f"ack {self._consumed}")
        return frame

    def _on_dc_close(self) -> None:
        if self._closed or self._broken:
            return
        if self._partial:
            self._fail("data channel closed inside a frame")
            return
        self._remote_closed = True
        self._deliver_eof()
        self._wake_senders()

    def _on_state(self) -> None:
        state = self._pc.connectionState
        if state == "failed":
            self._fail("ICE/DTLS connection failed")
        elif state == "closed" and not (self._closed or self._remote_closed):
            self._fail("peer connection closed")

    # -- teardown -----------------------------------------------------------------------

    def _abort(self) -> None:
        self._spawn(close_peer_connection(self._pc))

    def _spawn(self, coro: Any) -> None:
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Flush what was sent, close the data channel, then the peer connection."""
        graceful = not self._broken and self._dc.readyState == "open"
        if graceful:
            self._flush()
        if not self._mark_closed():
            return
        with anyio.CancelScope(shield=True):
            if graceful:
                closed = asyncio.Event()
                self._dc.on("close", closed.set)
                self._dc.close()
                with anyio.move_on_after(_CLOSE_TIMEOUT):
                    await closed.wait()
            await close_peer_connection(self._pc)
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
