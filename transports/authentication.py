"""Handshake and mutual authentication on a raw channel: ``establish``.

Both sides send a CBOR hello (capabilities, a fresh 32-byte nonce, the auth mode) and
negotiate. With a cluster secret each side then sends
``HMAC-SHA256(secret, label || role || SHA256(dialer hello) || SHA256(acceptor hello))``
and checks the peer's proof for the opposite role, so a reflected proof (wrong role) or
a replayed one (the other side's nonce differs) fails. No payload frame is delivered
before both proofs verified.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import logging
import secrets
import threading
from collections.abc import Callable

import anyio

from ._abc import DataChannel
from .config import LinkConfig
from .errors import (
    AuthenticationError,
    HandshakeError,
    HandshakeTimeoutError,
    IncompatiblePeerError,
    PeerRejectedError,
)
from .handshake import (
    HANDSHAKE_FRAME_LIMIT,
    Handshake,
    Hello,
    Negotiated,
    decode_message,
    encode_message,
    negotiate,
)

__all__ = ["PeerFilter", "establish", "next_epoch"]

logger = logging.getLogger("transports.handshake")

_LABEL = b"lazily-ipc/auth/v1\x00"
_NONCE_SIZE = 32
_epochs: dict[tuple[str, int, int], itertools.count[int]] = {}
_epochs_lock = threading.Lock()


def next_epoch(session_id: str, local_peer_id: int, remote_peer_id: int) -> int:
    """The next connection epoch for a peer: strictly increasing within this process."""
    key = (session_id, local_peer_id, remote_peer_id)
    with _epochs_lock:
        counter = _epochs.get(key)
        if counter is None:
            counter = _epochs[key] = itertools.count(1)
        return next(counter)


def _proof(secret: bytes, role: bytes, dialer_hello: bytes, acceptor_hello: bytes) -> bytes:
    message = b"".join(
        (
            _LABEL,
            role,
            b"\x00",
            hashlib.sha256(dialer_hello).digest(),
            hashlib.sha256(acceptor_hello).digest(),
        )
    )
    return hmac.new(secret, message, hashlib.sha256).digest()


#: Given the peer id a remote announces, returns why we refuse it (or None to go on).
PeerFilter = Callable[[int], str | None]


async def establish(
    channel: DataChannel,
    config: LinkConfig,
    *,
    initiator: bool,
    accept_peer: PeerFilter | None = None,
) -> DataChannel:
    """Run handshake and authentication on a raw ``channel`` and return it ready for use.

    ``initiator`` is True on the dialing side. ``accept_peer`` may refuse the announced
    peer id (the refusal is sent to the peer, field ``peer_id``); the id is bound into
    the authentication, so the returned channel's ``remote_peer_id`` is the one checked.
    On any failure the channel is closed and a ``HandshakeError`` subclass naming the
    field is raised (``AuthenticationError``, ``IncompatiblePeerError``,
    ``PeerRejectedError``, ``HandshakeTimeoutError``).
    """
    try:
        async with asyncio.timeout(config.handshake_timeout):
            await _exchange(channel, config, initiator, accept_peer)
    except BaseException as exc:
        error: BaseException = exc
        if isinstance(exc, TimeoutError) and not isinstance(exc, HandshakeError):
            error = HandshakeTimeoutError(config.handshake_timeout)
        elif isinstance(exc, anyio.EndOfStream | anyio.BrokenResourceError):
            reason = getattr(channel, "close_reason", None) or "connection closed"
            error = HandshakeError("handshake", f"link closed during handshake ({reason})")
        if isinstance(error, HandshakeError):
            logger.warning("handshake with %s refused: %s", channel.remote_address, error)
        with anyio.CancelScope(shield=True):
            await channel.aclose()
        if error is exc:
            raise
        raise error from None
    return channel


async def _exchange(
    channel: DataChannel, config: LinkConfig, initiator: bool, accept_peer: PeerFilter | None
) -> None:
    # Handshake frames may exceed a tiny configured ceiling; the negotiated one applies after.
    channel.max_frame_size = max(config.max_frame_size, HANDSHAKE_FRAME_LIMIT)
    local = Handshake.from_config(config)
    auth = "none" if config.secret is None else "hmac-sha256"
    hello = Hello(local, secrets.token_bytes(_NONCE_SIZE), auth).encode()
    await channel.send(hello)
    remote_frame = await channel.receive()
    try:
        remote = Hello.decode(remote_frame)
        negotiated = negotiate(local, remote.handshake, required_features=config.required_features)
        if remote.handshake.peer_id == config.peer_id:
            raise IncompatiblePeerError(
                "peer_id", f"peer claims our own id {config.peer_id}: two nodes share one id"
            )
        refusal = accept_peer(remote.handshake.peer_id) if accept_peer is not None else None
        if refusal is not None:
            raise IncompatiblePeerError("peer_id", refusal)
        if remote.auth != auth:
            raise AuthenticationError(
                f"peer offers {remote.auth!r} authentication, we need {auth!r}"
            )
    except PeerRejectedError:
        raise
    except HandshakeError as exc:
        await _refuse(channel, exc.field, exc.message)
        raise
    if config.secret is not None:
        await _authenticate(channel, config.secret, initiator, hello, remote_frame)
    _bind(channel, config, remote.handshake, negotiated, authenticated=config.secret is not None)


async def _authenticate(
    channel: DataChannel, secret: bytes, initiator: bool, hello: bytes, remote_frame: bytes
) -> None:
    dialer_hello, acceptor_hello = (hello, remote_frame) if initiator else (remote_frame, hello)
    ours, theirs = (b"dialer", b"acceptor") if initiator else (b"acceptor", b"dialer")
    await channel.send(
        encode_message({"proof": _proof(secret, ours, dialer_hello, acceptor_hello)})
    )
    reply = decode_message(await channel.receive())
    proof = reply.get("proof")
    expected = _proof(secret, theirs, dialer_hello, acceptor_hello)
    if not isinstance(proof, bytes) or not hmac.compare_digest(proof, expected):
        await _refuse(channel, "auth", "authentication failed")
        raise AuthenticationError("peer failed the cluster-secret challenge (wrong secret?)")


async def _refuse(channel: DataChannel, field: str, message: str) -> None:
    """Tell the peer which field we refused, best effort."""
    try:
        channel.send_nowait(encode_message({"error": field, "message": message[:200]}))
    except Exception:  # the link may already be gone; the refusal is only a courtesy
        return
    await asyncio.sleep(0)


def _bind(
    channel: DataChannel,
    config: LinkConfig,
    remote: Handshake,
    negotiated: Negotiated,
    *,
    authenticated: bool,
) -> None:
    channel.local_peer_id = config.peer_id
    channel.remote_peer_id = remote.peer_id
    channel.session_id = config.session_id
    channel.max_frame_size = negotiated.max_frame_size
    channel.fragmentation_supported = negotiated.fragmentation_supported
    channel.remote_features = remote.features
    channel.authenticated = authenticated
    channel.epoch = next_epoch(config.session_id, config.peer_id, remote.peer_id)
    channel.established = True
