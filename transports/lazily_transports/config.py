"""Per-node link configuration shared by every transport."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_CLIENT_MAX_FRAME_SIZE",
    "DEFAULT_FEATURES",
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_PENDING_HANDSHAKES",
    "DEFAULT_MAX_PENDING_PER_SOURCE",
    "MAX_FRAME_SIZE_LIMIT",
    "LinkConfig",
]

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
#: Largest ceiling a 4-byte length prefix can express.
MAX_FRAME_SIZE_LIMIT = 2**32 - 1
DEFAULT_FEATURES: frozenset[str] = frozenset({"raft-queue-v1"})
#: Connections a listener holds in their handshake, in all and from one source.
DEFAULT_MAX_PENDING_HANDSHAKES = 128
DEFAULT_MAX_PENDING_PER_SOURCE = 8
#: Frame ceiling of a link accepted from a client (a dialer with a credential).
DEFAULT_CLIENT_MAX_FRAME_SIZE = 1024 * 1024
_U64 = 2**64


def _feature_set(name: str, value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str | bytes):
        raise TypeError(
            f"{name} must be a collection of strings, not a single {type(value).__name__}"
        )
    items = frozenset(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise TypeError(f"{name} must contain non-empty strings, got {item!r}")
    return items


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """Identity, secret and limits this node uses for every link.

    ``secret`` is the cluster secret for mutual HMAC authentication. ``secret=None``
    produces unauthenticated links and is refused unless ``allow_unauthenticated`` is
    set. ``max_frame_size`` is our receive ceiling; each link uses the smaller of ours
    and the peer's. ``send_buffer_size`` and ``receive_buffer_size`` bound the bytes
    queued per link in each direction before ``send`` waits (or ``send_nowait`` raises
    ``anyio.WouldBlock``) and before reading from the peer pauses.

    Until a peer is authenticated its connection is held to the handshake limits (64 KiB
    frames, one frame queued) and counts as *pending*. A listener keeps at most
    ``max_pending_handshakes`` pending connections in all and ``max_pending_per_source``
    from one source (an IP address; a Unix-socket listener is one source); connections
    over either cap are closed at once and counted.

    A *client* dials with ``credential``, the name of its credential, and ``secret``
    set to that credential's token: the acceptor looks the token up by name (never using
    its cluster secret for it) and hands the link to its client handler, never to its
    peers. A client with ``secret=None`` proves its credential by the TLS client
    certificate of its link instead (``tls://`` or ``wss://``), which the acceptor
    checks. ``client_max_frame_size`` caps the frames of links this node accepts from
    clients, whatever they announce.
    """

    peer_id: int
    session_id: str
    secret: bytes | None
    allow_unauthenticated: bool = False
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    features: frozenset[str] = DEFAULT_FEATURES
    required_features: frozenset[str] = frozenset()
    fragmentation_supported: bool = False
    handshake_timeout: float = 5.0
    send_buffer_size: int = 1024 * 1024
    receive_buffer_size: int = 1024 * 1024
    max_pending_handshakes: int = DEFAULT_MAX_PENDING_HANDSHAKES
    max_pending_per_source: int = DEFAULT_MAX_PENDING_PER_SOURCE
    credential: str | None = None
    client_max_frame_size: int = DEFAULT_CLIENT_MAX_FRAME_SIZE

    def __post_init__(self) -> None:
        if isinstance(self.peer_id, bool) or not isinstance(self.peer_id, int):
            raise TypeError(f"peer_id must be an int, not {type(self.peer_id).__name__}")
        if not 0 <= self.peer_id < _U64:
            raise ValueError(f"peer_id must fit in an unsigned 64-bit integer, got {self.peer_id}")
        if not isinstance(self.session_id, str) or not self.session_id:
            raise ValueError("session_id must be a non-empty string naming the cluster")
        if self.secret is None:
            if not self.allow_unauthenticated and self.credential is None:
                raise ValueError(
                    "secret=None disables peer authentication; pass allow_unauthenticated=True "
                    "to accept unauthenticated links explicitly"
                )
        elif not isinstance(self.secret, bytes) or not self.secret:
            raise ValueError("secret must be non-empty bytes (the shared cluster secret)")
        if self.credential is not None:
            if not isinstance(self.credential, str) or not 0 < len(self.credential) <= 128:
                raise ValueError("credential must be a name of 1 to 128 characters")
        if isinstance(self.max_frame_size, bool) or not isinstance(self.max_frame_size, int):
            raise TypeError("max_frame_size must be an int")
        if not 1 <= self.max_frame_size <= MAX_FRAME_SIZE_LIMIT:
            raise ValueError(
                f"max_frame_size must be between 1 and {MAX_FRAME_SIZE_LIMIT}, "
                f"got {self.max_frame_size}"
            )
        object.__setattr__(self, "features", _feature_set("features", self.features))
        required = _feature_set("required_features", self.required_features)
        object.__setattr__(self, "required_features", required)
        if not self.handshake_timeout > 0:
            raise ValueError(f"handshake_timeout must be positive, got {self.handshake_timeout}")
        for name in (
            "send_buffer_size",
            "receive_buffer_size",
            "max_pending_handshakes",
            "max_pending_per_source",
            "client_max_frame_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
