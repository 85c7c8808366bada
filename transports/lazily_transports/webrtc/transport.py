"""WebRTC links (aiortc), brokered by a lazily signaling server over WebSocket.

Addresses name the signaling room and, to dial, the remote peer id::

    webrtc://127.0.0.1:8765/room?peer=2        (signaling over ws://)
    webrtc+ws://127.0.0.1:8765/room?peer=2     (the same)
    webrtc+wss://signal.example:443/room?peer=2
    ...&ice_host=10.0.0.5&ice_host=fd00::5     (host candidates to offer)

``listen`` joins the room as ``config.peer_id`` and its ``address`` is the dialable
address of this peer. ``dial`` joins as ``config.peer_id`` too (sharing the
listener's membership when both run in one process) and negotiates a link to
``peer``. Without ``ice_host``, host candidates come from ``IceSettings`` and, when
that has none, default to the loopback address if the signaling host is a loopback
address (single-host clusters and tests); otherwise aioice enumerates interfaces.
No STUN/TURN server is contacted unless ``IceSettings.ice_servers`` lists one.
The signaling server is not trusted: the capability handshake and HMAC
authentication run on the data channel like on any other transport.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import ipaddress
import logging
import ssl
import weakref
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from ..abc import ChannelAcceptor, DataChannel, Listener, Transport
from ..config import LinkConfig
from ..errors import AddressError
from .channel import MESSAGE_SIZE, PROTOCOL, WebRTCChannel
from .ice import IceSettings
from .session import SignalingSession
from .signaling import MAX_PEER_ID, SignalingClient, SignalingError
from .signaling._room import ErrorCode

__all__ = [
    "MESSAGE_SIZE",
    "PROTOCOL",
    "IceSettings",
    "WebRTCAddress",
    "WebRTCChannel",
    "WebRTCListener",
    "WebRTCTransport",
    "parse_webrtc_address",
]

_log = logging.getLogger("lazily_transports.webrtc")

_SCHEMES = {"webrtc": "ws", "webrtc+ws": "ws", "webrtc+wss": "wss"}
_LOOPBACK_NAMES = {"localhost": "127.0.0.1"}
_JOIN_RETRY = 0.05
_REJOIN_MIN = 0.1
_REJOIN_MAX = 2.0
_JOIN_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class WebRTCAddress:
    """A parsed ``webrtc[+ws|+wss]://host:port/room[?peer=N][&ice_host=IP...]``."""

    scheme: str
    signaling_url: str
    host: str
    peer: int | None
    ice_hosts: tuple[str, ...] | None


def _peer_id(text: str, address: str) -> int:
    if not text.isdigit() or int(text) > MAX_PEER_ID:
        raise AddressError(f"peer must be an integer in [0, 2**53-1] in {address!r}")
    return int(text)


def parse_webrtc_address(address: str) -> WebRTCAddress:
    """Parse a WebRTC address; raises ``AddressError`` on anything malformed."""
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError as exc:
        raise AddressError(f"invalid WebRTC address {address!r}: {exc}") from None
    if parts.scheme not in _SCHEMES:
        raise AddressError(f"expected webrtc://, webrtc+ws:// or webrtc+wss://, got {address!r}")
    if not parts.hostname or port is None:
        raise AddressError(f"WebRTC address needs the signaling host:port: {address!r}")
    if parts.fragment or parts.username or parts.password:
        raise AddressError(f"WebRTC address takes no fragment or credentials: {address!r}")
    peer: int | None = None
    ice_hosts: list[str] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
        if key == "peer" and peer is None:
            peer = _peer_id(value, address)
        elif key == "ice_host":
            for item in value.split(","):
                try:
                    ice_hosts.append(str(ipaddress.ip_address(item)))
                except ValueError:
                    raise AddressError(f"ice_host must be an IP address, got {item!r}") from None
        else:
            raise AddressError(f"unexpected or repeated parameter {key!r} in {address!r}")
    host = parts.hostname
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    url = f"{_SCHEMES[parts.scheme]}://{netloc}{parts.path or '/'}"
    return WebRTCAddress(parts.scheme, url, host, peer, tuple(ice_hosts) or None)


def _loopback_hosts(host: str) -> tuple[str, ...] | None:
    host = _LOOPBACK_NAMES.get(host, host)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if not ip.is_loopback:
        return None
    return ("127.0.0.1",) if ip.version == 4 else ("::1",)


class WebRTCListener(Listener):
    """Accepts links from any peer of the room until closed.

    When the signaling connection is lost the listener keeps rejoining the room
    (backoff up to ``_REJOIN_MAX`` seconds); links already open are unaffected.
    """

    def __init__(
        self,
        transport: WebRTCTransport,
        session: SignalingSession,
        parsed: WebRTCAddress,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        assert session.listener is not None
        self._transport = transport
        self._session = session
        self._parsed = parsed
        self._ssl_context = ssl_context
        self._closed = False
        self._rejoin = asyncio.get_running_loop().create_task(self._keep_joined())

    @property
    def address(self) -> str:
        url = self._session.url.split("://", 1)[1]
        return f"{self._parsed.scheme}://{url}?peer={self._session.peer}"

    @property
    def peers(self) -> frozenset[int]:
        """Peer ids currently in the signaling room (besides this one)."""
        return frozenset(self._session.roster)

    async def _keep_joined(self) -> None:
        listener = self._session.listener
        assert listener is not None
        delay = _REJOIN_MIN
        while not self._closed:
            await self._session.closed.wait()
            _log.warning("signaling for %s lost; rejoining", self.address)
            while not self._closed:
                try:
                    session = await self._transport._acquire(
                        self._parsed, listener[0], self._ssl_context
                    )
                except Exception as exc:
                    _log.info("rejoining %s failed: %s", self.address, exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _REJOIN_MAX)
                    continue
                if session.listener is not None:
                    await self._transport._release(session)
                    _log.error("another listener took over %s", self.address)
                    return
                session.listener = listener
                self._session, delay = session, _REJOIN_MIN
                break

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._rejoin.cancel()
            await asyncio.gather(self._rejoin, return_exceptions=True)
            self._session.listener = None
            await self._transport._release(self._session)


class WebRTCTransport(Transport):
    """Opens WebRTC links; sessions are per event loop, room and local peer id.

    ``ice`` holds the STUN/TURN servers and host candidates; ``signaling_token`` is
    sent to a signaling server that requires one.
    """

    def __init__(
        self,
        ice: IceSettings | None = None,
        *,
        negotiation_timeout: float = 20.0,
        signaling_timeout: float = 10.0,
        signaling_token: str | None = None,
    ) -> None:
        if negotiation_timeout <= 0 or signaling_timeout <= 0:
            raise ValueError("timeouts must be positive")
        self.ice = ice if ice is not None else IceSettings()
        self._signaling_token = signaling_token
        self._negotiation_timeout = negotiation_timeout
        self._signaling_timeout = signaling_timeout
        self._sessions: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, int], asyncio.Future[SignalingSession]]
        ] = weakref.WeakKeyDictionary()

    def _ice_for(self, parsed: WebRTCAddress) -> IceSettings:
        hosts = parsed.ice_hosts or self.ice.host_addresses or _loopback_hosts(parsed.host)
        return dataclasses.replace(self.ice, host_addresses=hosts)

    async def _acquire(
        self, parsed: WebRTCAddress, config: LinkConfig, ssl_context: ssl.SSLContext | None
    ) -> SignalingSession:
        if config.peer_id > MAX_PEER_ID:
            raise AddressError(f"WebRTC peer ids are at most 2**53-1, got {config.peer_id}")
        loop = asyncio.get_running_loop()
        sessions = self._sessions.setdefault(loop, {})
        key = (parsed.signaling_url, config.peer_id)
        future = sessions.get(key)
        if future is None:
            future = sessions[key] = loop.create_future()
            try:
                session = await self._join(parsed, config, ssl_context)
            except BaseException as exc:
                del sessions[key]
                future.set_exception(exc)
                future.exception()  # retrieved: waiters re-raise it themselves
                raise
            future.set_result(session)
        session = await asyncio.shield(future)
        session.refs += 1
        return session

    async def _join(
        self, parsed: WebRTCAddress, config: LinkConfig, ssl_context: ssl.SSLContext | None
    ) -> SignalingSession:
        for attempt in range(_JOIN_ATTEMPTS):
            try:
                client = await SignalingClient.connect(
                    parsed.signaling_url,
                    config.peer_id,
                    timeout=self._signaling_timeout,
                    ssl_context=ssl_context if parsed.scheme == "webrtc+wss" else None,
                    token=self._signaling_token,
                )
                break
            except SignalingError as exc:
                # A previous membership of ours may still be leaving the room.
                if exc.code != ErrorCode.PEER_TAKEN or attempt == _JOIN_ATTEMPTS - 1:
                    raise OSError(
                        errno.EADDRINUSE if exc.code == ErrorCode.PEER_TAKEN else errno.EACCES,
                        f"cannot join {parsed.signaling_url} as peer {config.peer_id}: {exc}",
                    ) from exc
                await asyncio.sleep(_JOIN_RETRY)
        return SignalingSession(
            client,
            parsed.signaling_url,
            self._ice_for(parsed),
            self._negotiation_timeout,
            self._forget,
        )

    def _forget(self, session: SignalingSession) -> None:
        sessions = self._sessions.get(asyncio.get_running_loop(), {})
        key = (session.url, session.peer)
        future = sessions.get(key)
        if future is not None and future.done() and future.result() is session:
            del sessions[key]

    async def _release(self, session: SignalingSession) -> None:
        session.refs -= 1
        if session.refs <= 0 and session.listener is None:
            await session.aclose()

    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        parsed = parse_webrtc_address(address)
        if parsed.peer is None:
            raise AddressError(f"dialing needs the remote peer id: {address}?peer=N")
        session = await self._acquire(parsed, config, ssl_context)
        try:
            return await session.dial(parsed.peer, config)
        finally:
            await asyncio.shield(self._release(session))

    async def listen(
        self,
        address: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Listener:
        parsed = parse_webrtc_address(address)
        if parsed.peer is not None and parsed.peer != config.peer_id:
            raise AddressError(
                f"listen address names peer {parsed.peer} but config.peer_id is {config.peer_id}"
            )
        session = await self._acquire(parsed, config, ssl_context)
        if session.listener is not None:
            await self._release(session)
            raise OSError(errno.EADDRINUSE, f"peer {config.peer_id} already listens on {address}")
        session.listener = (config, accept)
        return WebRTCListener(self, session, parsed, ssl_context)

