"""Handshake and mutual authentication on a raw channel (the procedure behind ``establish``).

Both sides send a CBOR hello (capabilities, a fresh 32-byte nonce, the auth mode) and
negotiate. With a cluster secret each side then sends
``HMAC-SHA256(secret, label || role || SHA256(dialer hello) || SHA256(acceptor hello))``
and checks the peer's proof for the opposite role, so a reflected proof (wrong role) or
a replayed one (the other side's nonce differs) fails. The dialer proves first and the
acceptor only once that proof verified: a stranger dialing a member gets nothing
computed with the secret (or a client's token) to guess it from. Each side then raises its
limits and sends ``{"ready": true}``; no payload frame is sent before the peer's ready
arrived, nor delivered before both proofs verified.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import itertools
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from ..abc import DataChannel
from ..config import LinkConfig
from ..errors import (
    NO_CLIENTS,
    AuthenticationError,
    HandshakeError,
    HandshakeTimeoutError,
    IncompatiblePeerError,
    PeerRejectedError,
    ProbeAnswered,
)
from ..tls import CertificateCheck
from ._handshake import (
    CERTIFICATE_AUTH,
    PROBE_FEATURE,
    READY_FEATURE,
    Handshake,
    Hello,
    Negotiated,
    decode_message,
    encode_message,
    negotiate,
)

__all__ = [
    "Agreement",
    "CredentialLookup",
    "FailureReport",
    "PeerFilter",
    "PeerVetter",
    "ProbeAnswer",
    "exchange",
    "next_epoch",
    "probe_channel",
]

logger = logging.getLogger("lazily_transports.handshake")

_LABEL = b"lazily-ipc/auth/v1\x00"
_CLIENT_LABEL = b"lazily-ipc/client-auth/v1\x00"
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


def _proof(
    secret: bytes, role: bytes, dialer_hello: bytes, acceptor_hello: bytes, label: bytes = _LABEL
) -> bytes:
    message = b"".join(
        (
            label,
            role,
            b"\x00",
            hashlib.sha256(dialer_hello).digest(),
            hashlib.sha256(acceptor_hello).digest(),
        )
    )
    return hmac.new(secret, message, hashlib.sha256).digest()


#: Given the peer id a remote announces, returns why we refuse it (or None to go on).
PeerFilter = Callable[[int], str | None]
#: Given an authenticated peer's id and announced features, returns why we refuse it.
PeerVetter = Callable[[int, frozenset[str]], str | None]
#: Most characters of a probe's note (the answer says why a link is refused).
PROBE_NOTE_CHARS = 600
#: Given an authenticated prober's peer id and the features it announced (an identity
#: it carries there, say), returns a note sent with "probe passed".
ProbeAnswer = Callable[[int, frozenset[str]], str]
#: Told about a failed handshake before the channel is closed.
FailureReport = Callable[[DataChannel, HandshakeError], None]
#: Given the credential name a client announces, returns its token (or the tokens it
#: may prove, any one of them: while a token is being replaced), or the check of the TLS
#: certificate it must have presented instead (None: unknown).
CredentialLookup = Callable[[str], bytes | tuple[bytes, ...] | CertificateCheck | None]


@dataclass(frozen=True, slots=True)
class Agreement:
    """What a completed handshake settled: the remote hello and the negotiated limits."""

    remote: Handshake
    negotiated: Negotiated
    authenticated: bool
    epoch: int
    credential: str | None = None
    #: Which of the client's tokens it proved (see ``LinkAttribute.credential_token``).
    credential_token: int | None = None


async def exchange(
    channel: DataChannel,
    config: LinkConfig,
    *,
    initiator: bool,
    accept_peer: PeerFilter | None = None,
    admit: PeerVetter | None = None,
    answer_probe: ProbeAnswer | None = None,
    on_failure: FailureReport | None = None,
    credentials: CredentialLookup | None = None,
) -> Agreement:
    """Run handshake and authentication on ``channel``; see ``lazily_transports.establish``."""
    run = _Exchange(channel, config, initiator, accept_peer, admit, answer_probe, probing=False,
                    credentials=credentials)
    await _guarded(channel, config, run, on_failure or _log_failure)
    assert run.agreement is not None
    return run.agreement


async def probe_channel(
    channel: DataChannel, config: LinkConfig, *, accept_peer: PeerFilter | None = None
) -> str:
    """Ask the acceptor on a raw dialed ``channel`` whether it would accept this node.

    Runs the hello and authentication like ``establish`` with ``PROBE_FEATURE``
    announced; returns the acceptor's note when every check passed, or raises the
    ``HandshakeError`` naming the field it refused (wrong cluster, unknown member,
    wrong secret). The channel is closed either way and never carries a frame.
    """
    run = _Exchange(channel, config, True, accept_peer, None, None, probing=True)
    try:
        return await _guarded(channel, config, run, None)
    finally:
        with anyio.CancelScope(shield=True):
            await channel.aclose()


def _log_failure(channel: DataChannel, error: HandshakeError) -> None:
    logger.warning("handshake with %s refused: %s", channel.remote_address, error)


#: What an acceptor answers a proof that does not check out.
PROOF_REFUSED = "authentication failed"


async def _guarded(
    channel: DataChannel, config: LinkConfig, run: _Exchange, report: FailureReport | None
) -> str:
    try:
        async with asyncio.timeout(config.handshake_timeout):
            return await run.run()
    except BaseException as exc:
        error: BaseException = exc
        if isinstance(exc, TimeoutError) and not isinstance(exc, HandshakeError):
            error = HandshakeTimeoutError(config.handshake_timeout)
        elif isinstance(exc, anyio.EndOfStream | anyio.BrokenResourceError
                        | anyio.ClosedResourceError):  # closed here: made room for another
            reason = getattr(channel, "close_reason", None) or "connection closed"
            error = HandshakeError("handshake", f"link closed during handshake ({reason})"
                                   + run.went_away())
        if report is not None and isinstance(error, HandshakeError):
            report(channel, error)
        with anyio.CancelScope(shield=True):
            await channel.aclose()
        if error is exc:
            raise
        raise error from None


class _Exchange:
    """One side of the handshake on one channel."""

    def __init__(
        self,
        channel: DataChannel,
        config: LinkConfig,
        initiator: bool,
        accept_peer: PeerFilter | None,
        admit: PeerVetter | None,
        answer_probe: ProbeAnswer | None,
        *,
        probing: bool,
        credentials: CredentialLookup | None = None,
    ) -> None:
        self.credentials = credentials
        self.channel = channel
        self.config = config
        self.initiator = initiator
        self.accept_peer = accept_peer
        self.admit = admit
        self.answer_probe = answer_probe
        self.probing = probing
        self.agreement: Agreement | None = None
        #: Whom the dialer announced itself as, once its hello is read (acceptor only).
        self.announced: str | None = None
        self.proven = False

    def went_away(self) -> str:
        """What an acceptor knows of a dialer that closed the link mid-handshake."""
        if self.announced is None:
            return ""
        proof = " (authenticated)" if self.proven else " (not authenticated yet)"
        return (f": the dialer, {self.announced}{proof}, went away before the link was "
                "ready (stopped or died while connecting)")

    async def run(self) -> str:
        """The handshake; returns the acceptor's note for a probe, else ""."""
        channel, config = self.channel, self.config
        local = Handshake.from_config(config)
        if self.probing:
            local = dataclasses.replace(local, features=local.features | {PROBE_FEATURE})
        auth = "none" if config.secret is None else "hmac-sha256"
        if config.credential is not None and config.secret is None:
            auth = CERTIFICATE_AUTH
        hello = Hello(local, secrets.token_bytes(_NONCE_SIZE), auth).encode()
        if auth == CERTIFICATE_AUTH:
            # The acceptor speaks first; under TLS 1.3 its refusal of our certificate
            # (an alert) arrives here before anything of ours could make it reset.
            remote_frame = await channel.receive()
            await channel.send(hello)
        else:
            await channel.send(hello)
            remote_frame = await channel.receive()
        try:
            remote = Hello.decode(remote_frame)
            client = remote.handshake.credential if not self.initiator else config.credential
            if self.initiator and remote.handshake.credential is not None:
                raise IncompatiblePeerError("credential", "the acceptor announced a credential")
            required = frozenset() if client is not None else config.required_features
            negotiated = negotiate(
                local,
                remote.handshake,
                required_features=required | {READY_FEATURE},
                check_session=client is None,
            )
            peer_id = remote.handshake.peer_id
            if not self.initiator:
                self.announced = (f"member {peer_id}" if client is None
                                  else f"client {client[:64]!r}")
            secret: bytes | tuple[bytes, ...] | None
            if client is None:
                secret = self._peer_checks(peer_id, remote.auth, auth)
            else:
                secret = self._client_secret(client, remote.auth)
        except PeerRejectedError:
            raise
        except HandshakeError as exc:
            await _refuse(channel, exc.field, exc.message)
            raise
        certified = client is not None and secret is None
        token = None
        if secret is not None:
            label = _LABEL if client is None else _CLIENT_LABEL
            token = await _authenticate(channel, secret, self.initiator, hello, remote_frame,
                                        label, peer_id)
        self.proven = secret is not None or certified
        # From here on the peer is authenticated (or both sides opted out of it).
        if self.probing:
            return await _probe_reply(channel)
        if not self.initiator and PROBE_FEATURE in remote.handshake.features:
            answer = self.answer_probe if client is None else None
            note = answer(peer_id, remote.handshake.features) if answer is not None else ""
            await channel.send(encode_message({"probe": "passed",
                                               "message": note[:PROBE_NOTE_CHARS]}))
            raise ProbeAnswered(peer_id, note)
        refusal = (self.admit(peer_id, remote.handshake.features)
                   if self.admit is not None and client is None else None)
        if refusal is not None:
            await _refuse(channel, "peer_id", refusal)
            raise IncompatiblePeerError("peer_id", refusal)
        if client is not None and not self.initiator:
            limit = min(negotiated.max_frame_size, config.client_max_frame_size)
            negotiated = dataclasses.replace(negotiated, max_frame_size=limit)
        channel.open_limits(negotiated.max_frame_size, config.receive_buffer_size)
        await channel.send(encode_message({"ready": True}))
        reply = decode_message(await channel.receive())
        if reply.get("ready") is not True:
            await _refuse(channel, "ready", "expected the ready message")
            raise HandshakeError("ready", "peer sent another message instead of ready")
        channel.handshake_done()
        epoch = next_epoch(config.session_id, config.peer_id, peer_id)
        self.agreement = Agreement(remote.handshake, negotiated,
                                   secret is not None or certified, epoch, client,
                                   token if client is not None else None)
        return ""

    def _peer_checks(self, peer_id: int, remote_auth: str, auth: str) -> bytes | None:
        """A link between peers: the announced id is checked, the cluster secret proven."""
        if peer_id == self.config.peer_id:
            raise IncompatiblePeerError(
                "peer_id", f"peer claims our own id {self.config.peer_id}: two nodes share one id"
            )
        refusal = self.accept_peer(peer_id) if self.accept_peer is not None else None
        if refusal is not None:
            raise IncompatiblePeerError("peer_id", refusal)
        if remote_auth != auth:
            raise AuthenticationError(
                f"peer offers {remote_auth!r} authentication, we need {auth!r}"
            )
        return self.config.secret

    def _client_secret(self, client: str, remote_auth: str) -> bytes | tuple[bytes, ...] | None:
        """A client link: the token (or one of the tokens) of the credential the client
        named is proven, or (``None``) the TLS certificate under the link was checked."""
        if self.initiator:
            return self.config.secret  # None: our TLS certificate is the proof
        if self.credentials is None:
            raise IncompatiblePeerError("credential", NO_CLIENTS)
        found = self.credentials(client)
        if found is None:
            raise IncompatiblePeerError(
                "credential", f"unknown client credential {client[:64]!r}"
            )
        if isinstance(found, bytes | tuple):
            if remote_auth != "hmac-sha256":
                raise AuthenticationError(
                    f"client {client[:64]!r} authenticates with its token, not "
                    f"{remote_auth!r}")
            return found
        if remote_auth != CERTIFICATE_AUTH:
            raise AuthenticationError(
                f"client {client[:64]!r} authenticates with a TLS client certificate, not "
                "a token")
        refusal = found(self.channel.peer_certificate())
        if refusal is not None:
            raise AuthenticationError(refusal)
        return None


async def _probe_reply(channel: DataChannel) -> str:
    reply = decode_message(await channel.receive())
    if reply.get("probe") != "passed":
        raise HandshakeError("probe", "the peer does not answer probes")
    note = reply.get("message", "")
    return note[:PROBE_NOTE_CHARS] if isinstance(note, str) else ""


async def _authenticate(
    channel: DataChannel, secret: bytes | tuple[bytes, ...], initiator: bool, hello: bytes,
    remote_frame: bytes, label: bytes, peer_id: int,
) -> int:
    """The mutual proof. The dialer proves first; the acceptor checks that proof before
    it sends its own, so whoever dials it without the secret (or the token) never gets
    a proof to guess the secret from offline. An acceptor given several tokens accepts a
    proof made with any of them and proves itself with that one; returns its index."""
    dialer_hello, acceptor_hello = (hello, remote_frame) if initiator else (remote_frame, hello)
    ours, theirs = (b"dialer", b"acceptor") if initiator else (b"acceptor", b"dialer")
    keys = secret if isinstance(secret, tuple) else (secret,)
    if initiator:
        await channel.send(encode_message(
            {"proof": _proof(keys[0], ours, dialer_hello, acceptor_hello, label)}))
    try:
        reply = decode_message(await channel.receive())
    except PeerRejectedError as exc:
        if exc.field != "auth" or not exc.message.endswith(PROOF_REFUSED):
            raise  # refused for another reason (a credential of another kind): as said
        raise _failed(label, peer_id) from None  # the acceptor refused our proof
    proof = reply.get("proof")
    proven = None
    if isinstance(proof, bytes):
        for index, key in enumerate(keys):
            if hmac.compare_digest(proof, _proof(key, theirs, dialer_hello, acceptor_hello,
                                                 label)):
                proven = index
    if proven is None:
        await _refuse(channel, "auth", PROOF_REFUSED)
        raise _failed(label, peer_id)
    if not initiator:
        await channel.send(encode_message(
            {"proof": _proof(keys[proven], ours, dialer_hello, acceptor_hello, label)}))
    return proven


def _failed(label: bytes, peer_id: int) -> AuthenticationError:
    """The challenge with ``peer_id`` failed: the secret (or the client's token) differs."""
    if label == _CLIENT_LABEL:
        return AuthenticationError("the client token does not match (wrong token?)")
    return AuthenticationError(
        f"peer {peer_id} failed the cluster-secret challenge (wrong secret?)")


async def _refuse(channel: DataChannel, field: str, message: str) -> None:
    """Tell the peer which field we refused, best effort."""
    try:
        channel.send_nowait(encode_message({"error": field, "message": message[:200]}))
    except Exception:  # the link may already be gone; the refusal is only a courtesy
        return
    await asyncio.sleep(0)

