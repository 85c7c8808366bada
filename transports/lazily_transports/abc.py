"""Contracts: frame streams, the raw channels transports produce, transports and listeners.

A transport turns an address into *raw* channels: ``DataChannel`` objects whose
handshake has not run yet. ``lazily_transports.dial`` / ``lazily_transports.listen``
run ``lazily_transports.establish`` (capability handshake plus mutual authentication)
on them and hand out ``LinkStream`` wrappers, whose ``LinkAttribute`` typed attributes
describe the peer. A new transport subclasses ``Transport`` and ``DataChannel`` and is
made reachable by a ``lazily_transports.SchemeTable`` entry.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar

import anyio
from anyio import TypedAttributeSet, typed_attribute
from anyio.abc import ObjectStream

from ._core._admission import AdmissionGate
from ._core._handshake import HANDSHAKE_FRAME_LIMIT
from .config import LinkConfig
from .errors import FrameTooLargeError
from .frame_budget import FrameBudget
from .tls import PeerCertificate

__all__ = [
    "AddressInfo",
    "ChannelAcceptor",
    "DataChannel",
    "FrameStream",
    "LinkAttribute",
    "Listener",
    "Transport",
]

#: Consecutive ``receive`` calls served without suspending before one forced yield.
_RECEIVE_STREAK = 1024


class LinkAttribute(TypedAttributeSet):
    """What the handshake established about a link: ``stream.extra(LinkAttribute.peer_id)``."""

    #: This node's peer id.
    local_peer_id: int = typed_attribute()
    #: The remote peer id, bound into the authentication (the one ``accept_peer`` checked).
    peer_id: int = typed_attribute()
    #: The session (cluster name) both sides announced.
    session_id: str = typed_attribute()
    #: Connection epoch: strictly increasing per remote peer within this process.
    epoch: int = typed_attribute()
    #: The features the remote peer announced in its hello.
    remote_features: frozenset[str] = typed_attribute()
    #: The negotiated frame ceiling (the smaller one of both sides), in both directions.
    max_frame_size: int = typed_attribute()
    #: Whether both sides announced fragmentation support.
    fragmentation_supported: bool = typed_attribute()
    #: True when both sides proved the cluster secret (False only when both opted out).
    authenticated: bool = typed_attribute()
    #: Where the remote end is, as the transport names it.
    remote_address: str = typed_attribute()
    #: The credential a client authenticated with; ``None`` on a link between peers.
    credential: str | None = typed_attribute()
    #: Which of its credential's tokens a client proved (0: the first the lookup gave,
    #: 1: the next); ``None`` on a link between peers or proven by a certificate.
    credential_token: int | None = typed_attribute()


class FrameStream(ObjectStream[bytes]):
    """An ordered, reliable stream of whole byte frames.

    ``send`` waits while the bounded send buffer is full; ``send_nowait`` raises
    ``anyio.WouldBlock`` instead. Both raise ``FrameTooLargeError`` for a frame above
    the frame ceiling. ``receive`` raises ``anyio.EndOfStream`` after a clean close by
    the peer, ``LinkBrokenError`` (an ``anyio.BrokenResourceError``) when the link
    failed, and ``anyio.ClosedResourceError`` after our own ``aclose``.
    """

    @abstractmethod
    def send_nowait(self, item: bytes) -> None:
        """Queue ``item`` without waiting; ``anyio.WouldBlock`` when the buffer is full."""

    @abstractmethod
    def receive_nowait(self) -> bytes:
        """Return the next buffered frame, or raise ``WouldBlock`` / end / closed / broken."""

    @abstractmethod
    async def wait_send_ready(self) -> None:
        """Return once ``send_nowait`` may succeed, or the stream closed or broke."""

    @abstractmethod
    async def wait_receive_ready(self) -> None:
        """Return once ``receive_nowait`` will not raise ``WouldBlock``."""

    @property
    @abstractmethod
    def close_reason(self) -> str | None:
        """Why the link ended (``None`` while it is open)."""


class DataChannel(FrameStream):
    """A raw channel: one connection of a transport, before or after its handshake.

    It holds what the transport needs: ``remote_address``, ``source`` (where an
    accepted connection comes from: an IP address, or the listener for Unix sockets,
    for the listener's per-source caps) and the current ``max_frame_size``. A raw
    channel starts with the handshake limits: ``max_frame_size`` is
    ``HANDSHAKE_FRAME_LIMIT`` (checked from the length prefix, before a payload is
    buffered) and about one such frame is queued before reading pauses; ``establish``
    calls ``open_limits`` once the peer is authenticated.
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
        #: Bytes taken from the connection so far, those of frames not yet whole
        #: included: grows while a large frame arrives slowly, before it is received.
        self.received_bytes = 0
        #: Bytes of the frames ``send``/``send_nowait`` took so far, as this channel
        #: counts them (its framing included or not): the scale of :attr:`sent_bytes`.
        self.accepted_bytes = 0
        self._streak = 0

    @property
    def sent_bytes(self) -> int | None:
        """How many of :attr:`accepted_bytes` may have left this process (handed to the
        operating system): never fewer than did. The rest, still held here, never reached
        the peer, nor will once :meth:`abort` dropped them. ``None``: this channel cannot
        tell (take every frame it took as possibly sent)."""
        return None

    def abort(self) -> None:
        """Close now, dropping the frames not yet handed to the operating system
        (:meth:`aclose` sends them first)."""
        task = asyncio.ensure_future(self.aclose())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    @property
    def budget_waiting_since(self) -> float | None:
        """Loop time since which the link's half-read frame waits for room in its frame
        budget, reading nothing more (``None``: it does not wait)."""
        return None

    async def wait_ended(self) -> None:
        """Return once the link ended: closed here, broken, or the peer finished sending
        (frames it sent before may still be queued). A channel that cannot tell never
        returns."""
        await asyncio.Future()

    def owner_reports_breaks(self) -> None:
        """The channel's owner logs why the link ends (from :attr:`close_reason` and
        :attr:`peer_broke_protocol`): the channel itself logs a broken link at DEBUG
        only, so that one loss is not told twice."""

    def handshake_done(self) -> None:
        """``establish`` completed the handshake: a link that breaks from now on is the
        channel's to log (before, the handshake's own refusal line says it)."""

    @property
    def peer_broke_protocol(self) -> bool:
        """Whether the link ended because the peer broke the link's protocol (a frame
        over the limit, a message the link does not carry), not because it went away."""
        return False

    def use_frame_budget(self, budget: FrameBudget, owner: Hashable = None) -> bool:
        """Count the link's partly received frames in ``budget`` from now on, as
        ``owner``'s (see :mod:`lazily_transports.frame_budget`); False when this
        transport cannot (its frames are assembled where their bytes are not counted)."""
        return False

    # -- primitives each transport provides -------------------------------------------

    @abstractmethod
    def _send_frame_nowait(self, frame: bytes) -> None:
        """Queue one size-checked frame, or raise ``WouldBlock`` / a closed or broken error."""

    def open_limits(self, max_frame_size: int, receive_buffer_size: int) -> None:
        """Raise the handshake-time limits to the link's own (the peer is authenticated)."""
        self.max_frame_size = max_frame_size

    def peer_certificate(self) -> PeerCertificate | None:
        """The certificate the remote end presented over TLS, verified against the local
        context's CA (``None`` without TLS or without a client certificate)."""
        return None

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {LinkAttribute.remote_address: lambda: self.remote_address}

    # -- FrameStream ----------------------------------------------------------------------

    def send_nowait(self, item: bytes) -> None:
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

    def send_held(self, item: bytes) -> None:
        """:meth:`send_nowait`, except that a transport which queues frames keeps this one
        until :meth:`flush` (the caller's to call before it yields to the loop) instead
        of flushing later in this loop iteration."""
        self.send_nowait(item)

    def flush(self) -> None:
        """Hand frames queued by ``send_nowait`` to the connection now rather than later
        in this loop iteration (a transport that does not queue has nothing to do)."""

    def send_ready(self) -> bool:
        """Whether ``send_nowait`` would take a frame now instead of raising
        ``anyio.WouldBlock`` (a transport without a send buffer always would)."""
        return True

    def set_receive_hook(self, hook: Callable[[], None] | None) -> bool:
        """Have ``hook`` called right after incoming frames are queued, on the loop that
        receives them, so a consumer on that loop takes them (:meth:`receive_queued`)
        without a task switch; ``None`` removes it. Returns False when this channel does
        not call it: wait for the frames as usual."""
        return False

    def receive_queued(self) -> bytes | None:
        """A frame already queued, or ``None`` when there is none (also once the channel
        ended: :meth:`receive_nowait` says how)."""
        try:
            return self.receive_nowait()
        except Exception:
            return None

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
        return f"<{type(self).__name__} address={self.remote_address!r}>"


def _as_bytes(item: object) -> bytes:
    if isinstance(item, bytearray | memoryview):
        return bytes(item)
    raise TypeError(f"frames must be bytes, not {type(item).__name__}")


#: Called in the listener's event loop with each new raw (not yet handshaken) channel.
ChannelAcceptor = Callable[[DataChannel], None]


class Listener(ABC):
    """A bound, accepting endpoint of one transport.

    ``admission`` (set by ``lazily_transports.listen``) counts the connections still in
    their handshake and those refused over the caps (``pending``, ``refused``).
    """

    admission: AdmissionGate | None = None

    @property
    @abstractmethod
    def address(self) -> str:
        """The bound address, e.g. ``tcp://127.0.0.1:54321`` after listening on port 0."""

    @abstractmethod
    async def aclose(self) -> None:
        """Stop accepting; channels already handed out stay open."""


#: One address a host name was looked up to, as ``socket.getaddrinfo`` gives it:
#: ``(family, type, proto, canonname, sockaddr)``.
AddressInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[Any, ...]]


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


class HostTransport(Transport):
    """A transport whose addresses name a host: ``dial`` and ``probe`` look a host name
    up once, then connect through :meth:`connect_to`."""

    @abstractmethod
    async def connect_to(
        self, address: str, config: LinkConfig, found: Sequence[AddressInfo], *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> DataChannel:
        """As :meth:`connect`, at the first of ``found`` (the addresses the host name of
        ``address`` was looked up to) that answers, without looking it up again; TLS
        still verifies the peer's certificate against that host name."""
