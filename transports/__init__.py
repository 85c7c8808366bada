"""DataChannel transports: ordered, reliable, authenticated byte-frame links per peer.

``dial`` / ``listen`` open links by address (``memory://name``, ``unix:///path``,
``tcp://127.0.0.1:7001``, ``ws://host:port/path``, ``wss://...``); ``Mesh`` keeps one
link per peer with reconnects and reports peer events and frames.
"""

from ._abc import ChannelAcceptor, DataChannel, Listener, Transport
from .authentication import PeerFilter, establish, next_epoch
from .backoff import Backoff
from .buffered import BufferedChannel, Signal
from .config import (
    DEFAULT_FEATURES,
    DEFAULT_MAX_FRAME_SIZE,
    HandshakeConfig,
    LinkConfig,
)
from .errors import (
    AddressError,
    AuthenticationError,
    FrameTooLargeError,
    HandshakeError,
    HandshakeTimeoutError,
    IncompatiblePeerError,
    LinkBrokenError,
    PeerRejectedError,
    TransportError,
    UnknownPeerError,
)
from .events import EventStream, Frame, MeshEvent, PeerDown, PeerUp
from .handshake import (
    CODEC,
    PROTOCOL_ID,
    PROTOCOL_MAJOR_VERSION,
    Handshake,
    Hello,
    Negotiated,
    negotiate,
)
from .link import Link, PeerCounters
from .mesh import Mesh
from .registry import (
    ChannelHandler,
    dial,
    get_transport,
    listen,
    register_transport,
    registered_schemes,
    scheme_of,
)

__all__ = [
    "CODEC",
    "DEFAULT_FEATURES",
    "DEFAULT_MAX_FRAME_SIZE",
    "PROTOCOL_ID",
    "PROTOCOL_MAJOR_VERSION",
    "AddressError",
    "AuthenticationError",
    "Backoff",
    "BufferedChannel",
    "ChannelAcceptor",
    "ChannelHandler",
    "DataChannel",
    "EventStream",
    "Frame",
    "FrameTooLargeError",
    "Handshake",
    "HandshakeConfig",
    "HandshakeError",
    "HandshakeTimeoutError",
    "Hello",
    "IncompatiblePeerError",
    "Link",
    "LinkBrokenError",
    "LinkConfig",
    "Listener",
    "Mesh",
    "MeshEvent",
    "Negotiated",
    "PeerCounters",
    "PeerDown",
    "PeerFilter",
    "PeerRejectedError",
    "PeerUp",
    "Signal",
    "Transport",
    "TransportError",
    "UnknownPeerError",
    "dial",
    "establish",
    "get_transport",
    "listen",
    "negotiate",
    "next_epoch",
    "register_transport",
    "registered_schemes",
    "scheme_of",
]
