"""Abstract bases: the DataChannel every link yields, and the Transport/Listener pair.

A transport turns an address into *raw* channels: ``DataChannel`` objects whose
handshake has not run yet. ``lazily_transports.dial`` / ``lazily_transports.listen`` run
``lazily_transports.establish`` (capability handshake plus mutual authentication) on them
before any caller sees a frame. New transports subclass ``Transport`` (usually with
``lazily_transports.BufferedChannel`` as the channel base) and call
``lazily_transports.register_transport(scheme, transport)``.
"""

from __future__ import annotations

import asyncio
import ssl
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import anyio
from anyio.abc import ObjectStream

from .admission import AdmissionGate
from .config import LinkConfig
from .errors import FrameTooLargeError
from .handshake import HANDSHAKE_FRAME_LIMIT

__all__ = ["ChannelAcceptor", "DataChannel", "Listener", "Transport", "refuse_tls"]

#: Consecutive ``receive`` calls served without suspending before one forced yield.
_RECEIVE_STREAK = 1024


class DataChannel(ObjectStream[bytes]):
    """An ordered, reliable stream of whole byte frames to one authenticated peer.

    Attributes describe the link once ``establish`` has returned it: the remote
    ``remote_peer_id``, the shared ``session_id``, the negotiated ``max_frame_size``
    (used in both directions), ``fragmentation_supported``, ``remote_features`` and the
    connection ``epoch`` (monotonic per remote peer within this process).

    ``send`` waits while the bounded send buffer is full; ``send_nowait`` raises
    ``anyio.WouldBlock`` instead. Both raise ``FrameTooLargeError`` for a frame above
    ``max_frame_size``. ``receive`` raises ``anyio.EndOfStream`` after a clean close by
    the peer, ``LinkBrokenError`` (an ``anyio.BrokenResourceError``) when the link
    failed, and ``anyio.ClosedResourceError`` after our own ``aclose``.

    A raw channel starts with the handshake limits: ``max_frame_size`` is
    ``HANDSHAKE_FRAME_LIMIT`` (checked from the length prefix, before a payload is
    buffered) and about one such frame is queued before reading pauses; ``establish``
    calls ``open_limits`` once the peer is authenticated. ``source`` names where an
    accepted connection comes from (an IP address, or the listener for Unix sockets),
    for the listener's per-source caps.
    """

    #: Address scheme of the transport that produced the channel.
    scheme: ClassVar[str] = ""

    def __init__(
        self,
        *,
        max_frame_size: int = HANDSHAKE_FRAME_LIMIT,
        remote_address: str = "",
        source: str = "",
    ) -> None:
        self.remote_address = remote_address
        self.source = source or remote_address
        self.max_frame_size = max_frame_size
        self.local_peer_id = 0
        self.remote_peer_id = 0
        self.session_id = ""
        self.fragmentation_supported = False
        self.remote_features: frozenset[str] = frozenset()
        self.epoch = 0
        self.authenticated = False
        self.established = False
        self._streak = 0

    # -- primitives each transport provides -------------------------------------------

    @abstractmethod
    def _send_frame_nowait(self, frame: bytes) -> None:
        """Queue one size-checked frame, or raise ``WouldBlock`` / a closed or broken error."""

    @abstractmethod
    async def wait_send_ready(self) -> None:
        """Return once ``send_nowait`` may succeed, or the channel closed or broke."""

    @abstractmethod
    def receive_nowait(self) -> bytes:
        """Return the next buffered frame, or raise ``WouldBlock`` / end / closed / broken."""

    @abstractmethod
    async def wait_receive_ready(self) -> None:
        """Return once ``receive_nowait`` will not raise ``WouldBlock``."""

    @property
    @abstractmethod
    def close_reason(self) -> str | None:
        """Why the link ended (``None`` while it is open)."""

    def open_limits(self, max_frame_size: int, receive_buffer_size: int) -> None:
        """Raise the handshake-time limits to the link's own (the peer is authenticated)."""
        self.max_frame_size = max_frame_size

    # -- ObjectStream -------------------------------------------------------------------

    def send_nowait(self, item: bytes) -> None:
        """Queue ``item`` without waiting; ``anyio.WouldBlock`` when the buffer is full."""
        if type(item) is not bytes:
            item = _as_bytes(item)
        if len(item) > self.max_frame_size:
            raise FrameTooLargeError(len(item), self.max_frame_size)
        self._send_frame_nowait(item)

    async def send(self, item: bytes) -> None:
        while True:
            try:
                self.send_nowait(item)
                return
            except anyio.WouldBlock:
                await self.wait_send_ready()

    async def receive(self) -> bytes:
        while True:
            try:
                frame = self.receive_nowait()
            except anyio.WouldBlock:
                self._streak = 0
                await self.wait_receive_ready()
                continue
            self._streak += 1
            if self._streak >= _RECEIVE_STREAK:
                self._streak = 0
                await asyncio.sleep(0)
            return frame

    def __repr__(self) -> str:
        peer = self.remote_peer_id if self.established else "?"
        return (
            f"<{type(self).__name__} peer={peer} epoch={self.epoch} "
            f"address={self.remote_address!r}>"
        )


def _as_bytes(item: object) -> bytes:
    if isinstance(item, bytearray | memoryview):
        return bytes(item)
    raise TypeError(f"frames must be bytes, not {type(item).__name__}")


#: Called in the listener's event loop with each new raw (not yet handshaken) channel.
ChannelAcceptor = Callable[[DataChannel], None]


class Listener(ABC):
    """A bound, accepting endpoint of one transport.

    ``admission`` (set by ``lazily_transports.listen``) counts the connections still in their
    handshake and those refused over the caps (``pending``, ``refused``).
    """

    admission: AdmissionGate | None = None

    @property
    @abstractmethod
    def address(self) -> str:
        """The bound address, e.g. ``tcp://127.0.0.1:54321`` after listening on port 0."""

    @abstractmethod
    async def aclose(self) -> None:
        """Stop accepting; channels already handed out stay open."""


class Transport(ABC):
    """Opens raw channels for one or more address schemes."""

    @abstractmethod
    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        """Connect to ``address`` and return a raw channel (handshake not yet run)."""

    @abstractmethod
    async def listen(
        self,
        address: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Listener:
        """Bind ``address`` and pass every incoming raw channel to ``accept``."""


def refuse_tls(ssl_context: ssl.SSLContext | None, schemes: str) -> None:
    """Raise ValueError when an SSL context is passed to a transport without TLS."""
    if ssl_context is not None:
        raise ValueError(f"{schemes} links do not use TLS; pass ssl_context only for wss://")
