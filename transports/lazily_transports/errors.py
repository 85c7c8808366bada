"""Exception types raised by the transports package."""

from __future__ import annotations

from typing import Any

import anyio

__all__ = [
    "HTTP_ANSWERED",
    "HTTP_HINT",
    "NO_CLIENTS",
    "AddressError",
    "AuthenticationError",
    "FrameTooLargeError",
    "HandshakeError",
    "HandshakeTimeoutError",
    "IncompatiblePeerError",
    "LinkBrokenError",
    "LookupTimeoutError",
    "MissingDependencyError",
    "PeerRejectedError",
    "ProbeAnswered",
    "TransportError",
    "UnknownPeerError",
    "UntrustedDataError",
    "shown",
]


#: What a dialer's refusal says when an HTTP server answered at the address dialled.
HTTP_ANSWERED = "an HTTP server answered"
#: The end of such a refusal: what answered, and what to dial instead.
HTTP_HINT = f": {HTTP_ANSWERED}; dial a link address (listen, clients), not an http one"
#: An acceptor's refusal of a client at an address that serves none.
NO_CLIENTS = "this address does not accept clients"


class TransportError(Exception):
    """Base class of every error raised by this package."""


class AddressError(TransportError, ValueError):
    """An address string is malformed or names a scheme the scheme table lacks."""


class MissingDependencyError(TransportError, ImportError):
    """A transport needs an optional extra that is not installed; the message names it."""

    def __init__(self, what: str, extra: str, package: str) -> None:
        super().__init__(
            f"{what} need the {package!r} package, which is not installed: "
            f"pip install -e '.[{extra}]' in the lazily-queue clone",
            name=package,
        )
        self.extra = extra
        self.package = package


class FrameTooLargeError(TransportError, ValueError):
    """A frame exceeds the negotiated (or configured) maximum frame size."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the maximum frame size of {limit} bytes")
        self.size = size
        self.limit = limit


class HandshakeError(TransportError):
    """The capability handshake failed; ``field`` names the offending handshake field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"handshake failed on {field!r}: {message}")
        self.field = field
        self.message = message


class IncompatiblePeerError(HandshakeError):
    """Both handshakes decoded but their capabilities cannot be reconciled."""


class PeerRejectedError(HandshakeError):
    """The remote peer refused our handshake and told us which field it objected to."""


class AuthenticationError(HandshakeError):
    """The peer failed the cluster-secret challenge (or offered no authentication)."""

    def __init__(self, message: str) -> None:
        super().__init__("auth", message)


class HandshakeTimeoutError(HandshakeError, TimeoutError):
    """The peer did not complete the handshake and authentication in time."""

    def __init__(self, timeout: float) -> None:
        super().__init__("timeout", f"handshake not completed within {timeout:g} s")
        self.timeout = timeout


class LookupTimeoutError(TransportError, TimeoutError):
    """A dial's or probe's lookup of its address's host name did not finish within its
    timeout (the resolver, say a DNS server that does not answer, never replied)."""


class ProbeAnswered(TransportError):
    """The accepting side answered a peer's probe; the connection carried no frames."""

    def __init__(self, peer_id: int, note: str) -> None:
        super().__init__(f"answered a probe from peer {peer_id}")
        self.peer_id = peer_id
        self.note = note


class LinkBrokenError(anyio.BrokenResourceError, TransportError):
    """The link failed (bad frame, reset, truncation); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnknownPeerError(TransportError, LookupError):
    """A peer id is not part of the mesh."""

    def __init__(self, peer_id: int) -> None:
        super().__init__(f"unknown peer id {peer_id}")
        self.peer_id = peer_id


class UntrustedDataError(TransportError, ValueError):
    """Bytes from a peer, client or file were refused; ``reason`` names what (bounded text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to its first and last characters when longer
    than ``limit``; never raises (an int too long to print, or a failing ``__repr__``,
    is named by its type)."""
    try:
        if isinstance(value, (str, bytes, bytearray)) and len(value) > 2 * limit:
            head, tail = repr(value[:limit]), repr(value[-5:])
            return f"{head[:limit - 10]}...{tail[-5:]}"
        if isinstance(value, int) and value.bit_length() > 4 * limit:
            return f"an int of {value.bit_length()} bits"
        text = repr(value)
    except Exception:
        return f"a value of type {type(value).__name__} that cannot be shown"
    return text if len(text) <= limit else f"{text[:limit - 10]}...{text[-5:]}"
