"""DataChannel transports: ordered, reliable, authenticated byte-frame links per peer.

``dial`` / ``listen`` open links by address (``memory://name``, ``unix:///path``,
``tcp://127.0.0.1:7001``, ``ws://host:port/path``, ``wss://...``); ``Mesh`` keeps one
link per peer with reconnects and reports peer events and frames.
"""

from ._abc import ChannelAcceptor, DataChannel, Listener, Transport
from .admission import AdmissionGate
from .authentication import PeerFilter, ProbeAnswer, establish, next_epoch
from .backoff import Backoff
from .buffered import BufferedChannel, Signal
from .config import (
    DEFAULT_FEATURES,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_PENDING_HANDSHAKES,
    DEFAULT_MAX_PENDING_PER_SOURCE,
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
    ProbeAnswered,
    TransportError,
    UnknownPeerError,
    UntrustedDataError,
)
from .events import EventStream, Frame, MeshEvent, PeerDown, PeerUp
from .handshake import (
    CODEC,
    HANDSHAKE_FRAME_LIMIT,
    PROBE_FEATURE,
    PROTOCOL_ID,
    PROTOCOL_MAJOR_VERSION,
    READY_FEATURE,
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
    probe,
    register_transport,
    registered_schemes,
    scheme_of,
)

__all__ = [
    "CODEC",
    "DEFAULT_FEATURES",
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_PENDING_HANDSHAKES",
    "DEFAULT_MAX_PENDING_PER_SOURCE",
    "HANDSHAKE_FRAME_LIMIT",
    "PROBE_FEATURE",
    "PROTOCOL_ID",
    "PROTOCOL_MAJOR_VERSION",
    "READY_FEATURE",
    "AddressError",
    "AdmissionGate",
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
    "ProbeAnswer",
    "ProbeAnswered",
    "Signal",
    "Transport",
    "TransportError",
    "UnknownPeerError",
    "UntrustedDataError",
    "dial",
    "establish",
    "get_transport",
    "listen",
    "negotiate",
    "next_epoch",
    "probe",
    "register_transport",
    "registered_schemes",
    "scheme_of",
]
