"""The lazily capability handshake: fields, CBOR wire form and negotiation rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cbor2

from ..config import LinkConfig
from ..errors import HandshakeError, IncompatiblePeerError, PeerRejectedError, UntrustedDataError
from ..safe_cbor import PROTOCOL, brief

__all__ = [
    "CERTIFICATE_AUTH",
    "CODEC",
    "HANDSHAKE_FRAME_LIMIT",
    "PROBE_FEATURE",
    "PROTOCOL_ID",
    "PROTOCOL_MAJOR_VERSION",
    "READY_FEATURE",
    "Handshake",
    "Hello",
    "Negotiated",
    "decode_message",
    "encode_message",
    "negotiate",
]

PROTOCOL_ID = "lazily-ipc"
PROTOCOL_MAJOR_VERSION = 1
CODEC = "cbor"
#: Largest handshake or authentication frame we decode; the frame ceiling before a
#: link is established.
HANDSHAKE_FRAME_LIMIT = 64 * 1024
#: Each side ends the handshake with a ``ready`` message sent once it raised its own
#: limits; every peer must announce it (an older peer is refused naming it).
READY_FEATURE = "link-ready-v1"
#: Announced by a hello that only asks whether the peer would accept us: the acceptor
#: checks everything, answers ``{"probe": "passed"}`` and closes (no frames carried).
PROBE_FEATURE = "link-probe-v1"
_U64 = 2**64
_MAX_FEATURES = 256
#: Longest credential name a hello may carry.
MAX_CREDENTIAL_NAME = 128
#: The authentication mode of a client proving its identity by its TLS certificate
#: (verified by the TLS layer underneath) instead of a token.
CERTIFICATE_AUTH = "tls-certificate"
_AUTH_MODES = frozenset({"hmac-sha256", "none", CERTIFICATE_AUTH})


def _expect(mapping: Mapping[Any, Any], name: str, kind: type, default: Any = ...) -> Any:
    if name not in mapping:
        if default is ...:
            raise HandshakeError(name, "field is missing")
        return default
    value = mapping[name]
    if kind is int and isinstance(value, bool):
        raise HandshakeError(name, f"expected an integer, got {value!r}")
    if not isinstance(value, kind):
        raise HandshakeError(name, f"expected {kind.__name__}, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class Handshake:
    """One side's advertised capabilities (the first frame of every link)."""

    peer_id: int
    session_id: str
    max_frame_size: int
    protocol_id: str = PROTOCOL_ID
    protocol_major_version: int = PROTOCOL_MAJOR_VERSION
    codec: str = CODEC
    fragmentation_supported: bool = False
    ordered_reliable: bool = True
    features: frozenset[str] = frozenset()
    #: Set by a client: the name of the credential it authenticates with (its token
    #: replaces the cluster secret in the proof). Peers leave it out.
    credential: str | None = None

    @classmethod
    def from_config(cls, config: LinkConfig) -> Handshake:
        return cls(
            peer_id=config.peer_id,
            session_id=config.session_id,
            max_frame_size=config.max_frame_size,
            fragmentation_supported=config.fragmentation_supported,
            features=config.features | {READY_FEATURE},
            credential=config.credential,
        )

    @classmethod
    def from_mapping(cls, mapping: Mapping[Any, Any]) -> Handshake:
        """Decode leniently: defaults for optional fields, unknown keys ignored.

        Raises ``HandshakeError`` naming the field for a missing or mistyped value.
        """
        if not isinstance(mapping, Mapping):
            raise HandshakeError("handshake", f"expected a map, got {type(mapping).__name__}")
        protocol_id = _expect(mapping, "protocol_id", str)
        major = _expect(mapping, "protocol_major_version", int)
        codec = _expect(mapping, "codec", str)
        max_frame_size = _expect(mapping, "max_frame_size", int)
        if max_frame_size < 0:
            raise HandshakeError("max_frame_size", f"must not be negative, got {max_frame_size}")
        peer_id = _expect(mapping, "peer_id", int)
        if not 0 <= peer_id < _U64:
            raise HandshakeError("peer_id", f"must be an unsigned 64-bit integer, got {peer_id}")
        session_id = _expect(mapping, "session_id", str)
        raw_features = _expect(mapping, "features", list, [])
        if len(raw_features) > _MAX_FEATURES:
            raise HandshakeError("features", f"more than {_MAX_FEATURES} features")
        if not all(isinstance(item, str) for item in raw_features):
            raise HandshakeError("features", "every feature must be a string")
        credential = _expect(mapping, "credential", str, None)
        if credential is not None and not 0 < len(credential) <= MAX_CREDENTIAL_NAME:
            raise HandshakeError(
                "credential", f"must be 1 to {MAX_CREDENTIAL_NAME} characters long"
            )
        return cls(
            peer_id=peer_id,
            session_id=session_id,
            max_frame_size=max_frame_size,
            protocol_id=protocol_id,
            protocol_major_version=major,
            codec=codec,
            fragmentation_supported=_expect(mapping, "fragmentation_supported", bool, False),
            ordered_reliable=_expect(mapping, "ordered_reliable", bool, True),
            features=frozenset(raw_features),
            credential=credential,
        )

    def to_mapping(self) -> dict[str, Any]:
        mapping: dict[str, Any] = {
            "protocol_id": self.protocol_id,
            "protocol_major_version": self.protocol_major_version,
            "codec": self.codec,
            "max_frame_size": self.max_frame_size,
            "fragmentation_supported": self.fragmentation_supported,
            "ordered_reliable": self.ordered_reliable,
            "peer_id": self.peer_id,
            "session_id": self.session_id,
            "features": sorted(self.features),
        }
        if self.credential is not None:
            mapping["credential"] = self.credential
        return mapping


@dataclass(frozen=True, slots=True)
class Negotiated:
    """The limits both sides use after a successful negotiation."""

    max_frame_size: int
    fragmentation_supported: bool


def negotiate(
    local: Handshake, remote: Handshake, *, required_features: frozenset[str] = frozenset(),
    check_session: bool = True,
) -> Negotiated:
    """Reconcile two handshakes, or raise ``IncompatiblePeerError`` naming the field.

    Checks run in order: protocol_id, protocol_major_version, codec, ordered_reliable,
    max_frame_size, session_id (unless ``check_session`` is False: a client need not
    know the cluster's name), features.
    """

    def fail(field: str, message: str) -> IncompatiblePeerError:
        return IncompatiblePeerError(field, message)

    if local.protocol_id != remote.protocol_id:
        raise fail("protocol_id", f"{brief(remote.protocol_id)} is not {local.protocol_id!r}")
    if local.protocol_major_version != remote.protocol_major_version:
        raise fail(
            "protocol_major_version",
            f"peer speaks {remote.protocol_major_version}, we speak {local.protocol_major_version}",
        )
    if local.codec != remote.codec:
        raise fail("codec", f"peer uses {brief(remote.codec)}, we use {local.codec!r}")
    if not (local.ordered_reliable and remote.ordered_reliable):
        raise fail("ordered_reliable", "both sides must provide an ordered, reliable channel")
    if local.max_frame_size <= 0 or remote.max_frame_size <= 0:
        raise fail(
            "max_frame_size",
            f"ceilings must be positive (local {local.max_frame_size}, "
            f"remote {remote.max_frame_size})",
        )
    if not local.session_id or not remote.session_id:
        raise fail("session_id", "session id must not be empty")
    if check_session and local.session_id != remote.session_id:
        raise fail(
            "session_id",
            f"peer is in session {brief(remote.session_id)}, not {local.session_id!r}",
        )
    missing = required_features - remote.features
    if missing:
        raise fail("features", f"peer lacks required features {sorted(missing)}")
    return Negotiated(
        max_frame_size=min(local.max_frame_size, remote.max_frame_size),
        fragmentation_supported=local.fragmentation_supported and remote.fragmentation_supported,
    )


@dataclass(frozen=True, slots=True)
class Hello:
    """The first frame on the wire: capabilities plus authentication parameters."""

    handshake: Handshake
    nonce: bytes
    auth: str

    def encode(self) -> bytes:
        return encode_message(
            {**self.handshake.to_mapping(), "nonce": self.nonce, "auth": self.auth}
        )

    @classmethod
    def decode(cls, frame: bytes) -> Hello:
        """Decode a hello frame; a peer's refusal raises ``PeerRejectedError``."""
        mapping = decode_message(frame)
        handshake = Handshake.from_mapping(mapping)
        nonce = _expect(mapping, "nonce", bytes)
        if not 16 <= len(nonce) <= 64:
            raise HandshakeError("nonce", f"expected 16 to 64 bytes, got {len(nonce)}")
        auth = _expect(mapping, "auth", str)
        if auth not in _AUTH_MODES:
            raise HandshakeError("auth", f"unknown authentication mode {auth[:40]!r}")
        return cls(handshake=handshake, nonce=nonce, auth=auth)


def encode_message(mapping: Mapping[str, Any]) -> bytes:
    """CBOR-encode one handshake-phase message."""
    return cbor2.dumps(dict(mapping))


def decode_message(frame: bytes) -> dict[Any, Any]:
    """CBOR-decode one handshake-phase message into a map (protocol profile: no tags,
    string keys, shallow nesting; see :mod:`lazily_transports.safe_cbor`).

    Raises ``HandshakeError`` (field ``handshake``) for oversized, malformed or refused
    frames and ``PeerRejectedError`` when the frame is the peer's refusal notice.
    """
    if len(frame) > HANDSHAKE_FRAME_LIMIT:
        raise HandshakeError(
            "handshake", f"frame of {len(frame)} bytes exceeds {HANDSHAKE_FRAME_LIMIT}"
        )
    try:
        value = PROTOCOL.loads(frame, max_bytes=HANDSHAKE_FRAME_LIMIT)
    except UntrustedDataError as exc:
        raise HandshakeError("handshake", f"malformed CBOR: {exc.reason}") from None
    if not isinstance(value, dict):
        raise HandshakeError("handshake", f"expected a CBOR map, got {type(value).__name__}")
    if "error" in value:
        field = value.get("error")
        message = value.get("message", "")
        field = field[:64] if isinstance(field, str) and field else "unspecified"
        message = message[:200] if isinstance(message, str) else ""
        raise PeerRejectedError(field, f"peer refused the link: {message}")
    return value
