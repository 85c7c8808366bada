"""In-process links (``memory://name``), within one event loop or across threads.

Each direction is the receiver's frame queue; the sender appends to it directly, so a
frame costs no copy and no task switch. When the two ends live in different threads
(each with its own loop) wake-ups cross over with ``call_soon_threadsafe``; each end
must be used from its own loop only.
"""

from __future__ import annotations

import asyncio
import errno
import ssl
import threading

import anyio

from ._core._buffered import BufferedChannel
from ._core._tls import refuse_tls
from .abc import ChannelAcceptor, DataChannel, Listener, Transport
from .config import LinkConfig
from .errors import AddressError, LinkBrokenError

__all__ = ["MemoryChannel", "MemoryListener", "MemoryTransport"]

_PREFIX = "memory://"


def parse_memory_address(address: str) -> str:
    """The listener name of ``memory://name``."""
    if not address.startswith(_PREFIX) or len(address) == len(_PREFIX):
        raise AddressError(f"expected memory://NAME, got {address!r}")
    name = address[len(_PREFIX) :]
    if "/" in name or any(ch.isspace() for ch in name):
        raise AddressError(f"memory listener name must not contain '/' or spaces: {address!r}")
    return name


class MemoryChannel(BufferedChannel):
    """One end of an in-process pair.

    A sender waits while the receiver holds its receive limit (or our send buffer
    size, whichever is smaller) of unread bytes; a frame above the receiver's current
    ceiling breaks the link, as the length prefix would on a socket.
    """

    scheme = "memory"

    def __init__(self, config: LinkConfig, remote_address: str) -> None:
        super().__init__(
            receive_buffer_size=config.receive_buffer_size,
            send_buffer_size=config.send_buffer_size,
            remote_address=remote_address,
        )
        self._peer: MemoryChannel | None = None

    def _send_frame_nowait(self, frame: bytes) -> None:
        peer = self._peer
        if self._reason is not None or self._eof_sent or peer is None:
            raise self._send_error() or LinkBrokenError("not connected")
        if peer._closed or peer._broken:
            raise LinkBrokenError("closed by peer")
        if len(frame) > peer.max_frame_size:
            peer._fail(
                f"peer sent a frame of {len(frame)} bytes, above the maximum frame size of "
                f"{peer.max_frame_size} bytes",
                violation=True,
            )
            raise LinkBrokenError("the peer refused a frame above its maximum frame size")
        if peer._rx_added - peer._rx_taken >= min(self._send_buffer_size, peer._rx_limit):
            peer._rx_paused = True
            raise anyio.WouldBlock
        peer._rx.append(frame)
        peer._rx_added += len(frame)
        peer.received_bytes += len(frame)
        if peer._rx_waiters:
            peer._wake_receivers()

    def _writable(self) -> bool:
        peer = self._peer
        if peer is None or peer._closed or peer._broken:
            return True  # the next send raises
        if peer._rx_added - peer._rx_taken >= min(self._send_buffer_size, peer._rx_limit):
            peer._rx_paused = True
            return False
        return True

    def _resume_reading(self) -> None:
        if self._peer is not None:
            self._peer._wake_senders()

    async def send_eof(self) -> None:
        if self._eof_sent or self._closed:
            return
        self._eof_sent = True
        self._wake_senders()
        if self._peer is not None:
            self._peer._deliver_eof()

    async def aclose(self) -> None:
        if self._mark_closed() and self._peer is not None:
            self._peer._deliver_eof()
            self._peer._wake_senders()
        await asyncio.sleep(0)


class MemoryListener(Listener):
    """A named in-process endpoint; dialers in any thread reach it by name."""

    def __init__(
        self,
        name: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.name = name
        self.config = config
        self._accept = accept
        self._loop = loop

    @property
    def address(self) -> str:
        return _PREFIX + self.name

    def hand_off(self, channel: MemoryChannel) -> None:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._accept(channel)
        else:
            self._loop.call_soon_threadsafe(self._accept, channel)

    async def aclose(self) -> None:
        _Registry.remove(self)


class _Registry:
    listeners: dict[str, MemoryListener] = {}
    lock = threading.Lock()

    @classmethod
    def add(cls, listener: MemoryListener) -> None:
        with cls.lock:
            if listener.name in cls.listeners:
                raise OSError(errno.EADDRINUSE,
                              f"memory address {listener.address} is already in use")
            cls.listeners[listener.name] = listener

    @classmethod
    def remove(cls, listener: MemoryListener) -> None:
        with cls.lock:
            if cls.listeners.get(listener.name) is listener:
                del cls.listeners[listener.name]

    @classmethod
    def get(cls, name: str) -> MemoryListener | None:
        with cls.lock:
            return cls.listeners.get(name)


class MemoryTransport(Transport):
    """Transport for ``memory://name`` addresses."""

    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        refuse_tls(ssl_context, "memory://")
        name = parse_memory_address(address)
        listener = _Registry.get(name)
        if listener is None:
            raise ConnectionRefusedError(f"no memory listener at {address}")
        dialer = MemoryChannel(config, remote_address=address)
        acceptor = MemoryChannel(listener.config, remote_address=f"{address}#dialer")
        dialer._peer, acceptor._peer = acceptor, dialer
        try:
            listener.hand_off(acceptor)
        except RuntimeError as exc:  # the listener's loop is closed
            raise ConnectionRefusedError(f"memory listener at {address} is gone") from exc
        return dialer

    async def listen(
        self,
        address: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Listener:
        refuse_tls(ssl_context, "memory://")
        listener = MemoryListener(
            parse_memory_address(address), config, accept, asyncio.get_running_loop()
        )
        _Registry.add(listener)
        return listener

