"""Ordered, reliable, authenticated byte-frame links between peers.

``dial`` / ``listen`` open links by address (``memory://name``, ``unix:///path``,
``tcp://127.0.0.1:7001``, ``tls://...`` (TCP with TLS: :class:`TLSFiles`),
``ws://host:port/path``, ``wss://...``, and with the
``webrtc`` extra ``webrtc+ws://host:port/room?peer=N``) and hand out ``LinkStream``
objects: anyio object streams of whole frames whose handshake outcome is read as
typed attributes (``stream.extra(LinkAttribute.peer_id)``). A ``SchemeTable`` maps
address schemes to transports (``DEFAULT_SCHEMES`` unless one is passed). ``Mesh``
keeps one link per peer with reconnects and reports peer events and frames.
Contracts for new transports are in ``lazily_transports.abc``.
"""

from ._core._admission import AdmissionGate, LogLimiter, source_of
from ._core._authentication import CredentialLookup, PeerFilter, PeerVetter, ProbeAnswer
from ._core._handshake import (
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
from .abc import (
    AddressInfo,
    ChannelAcceptor,
    DataChannel,
    FrameStream,
    HostTransport,
    LinkAttribute,
    Listener,
    Transport,
)
from .config import (
    DEFAULT_CLIENT_MAX_FRAME_SIZE,
    DEFAULT_FEATURES,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_PENDING_HANDSHAKES,
    DEFAULT_MAX_PENDING_PER_SOURCE,
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
    LookupTimeoutError,
    MissingDependencyError,
    PeerRejectedError,
    ProbeAnswered,
    TransportError,
    UnknownPeerError,
    UntrustedDataError,
)
from .events import EventStream, Frame, MeshEvent, PeerCounters, PeerDown, PeerUp
from .frame_budget import FrameBudget
from .mesh import Mesh
from .schemes import (
    DEFAULT_SCHEMES,
    ChannelHandler,
    SchemeTable,
    TransportFactory,
    dial,
    listen,
    probe,
    scheme_of,
)
from .streams import LinkStream, establish
from .tls import TLS_SCHEMES, TLSConfigError, TLSFiles, describe_tls_error

__all__ = [
    "CODEC",
    "DEFAULT_CLIENT_MAX_FRAME_SIZE",
    "DEFAULT_FEATURES",
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_PENDING_HANDSHAKES",
    "DEFAULT_MAX_PENDING_PER_SOURCE",
    "DEFAULT_SCHEMES",
    "HANDSHAKE_FRAME_LIMIT",
    "PROBE_FEATURE",
    "PROTOCOL_ID",
    "PROTOCOL_MAJOR_VERSION",
    "READY_FEATURE",
    "TLS_SCHEMES",
    "AddressError",
    "AddressInfo",
    "AdmissionGate",
    "AuthenticationError",
    "ChannelAcceptor",
    "ChannelHandler",
    "CredentialLookup",
    "DataChannel",
    "EventStream",
    "Frame",
    "FrameBudget",
    "FrameStream",
    "FrameTooLargeError",
    "Handshake",
    "HandshakeError",
    "HandshakeTimeoutError",
    "Hello",
    "HostTransport",
    "IncompatiblePeerError",
    "LinkAttribute",
    "LinkBrokenError",
    "LinkConfig",
    "LinkStream",
    "Listener",
    "LogLimiter",
    "LookupTimeoutError",
    "Mesh",
    "MeshEvent",
    "MissingDependencyError",
    "Negotiated",
    "PeerCounters",
    "PeerDown",
    "PeerFilter",
    "PeerRejectedError",
    "PeerUp",
    "PeerVetter",
    "ProbeAnswer",
    "ProbeAnswered",
    "SchemeTable",
    "TLSConfigError",
    "TLSFiles",
    "Transport",
    "TransportError",
    "TransportFactory",
    "UnknownPeerError",
    "UntrustedDataError",
    "describe_tls_error",
    "dial",
    "establish",
    "listen",
    "negotiate",
    "probe",
    "scheme_of",
    "source_of",
]
