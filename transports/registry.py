"""Address-scheme registry and the ``dial`` / ``listen`` entry points."""

from __future__ import annotations

import asyncio
import importlib
import logging
import re
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from ._abc import DataChannel, Listener, Transport
from .authentication import PeerFilter, establish
from .config import LinkConfig
from .errors import AddressError, HandshakeError

__all__ = [
    "ChannelHandler",
    "dial",
    "get_transport",
    "listen",
    "register_transport",
    "registered_schemes",
    "scheme_of",
]

logger = logging.getLogger("transports.listener")

#: Receives each authenticated channel; the channel is closed when it returns.
ChannelHandler = Callable[[DataChannel], Awaitable[None]]

_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
_BUILTIN_MODULES = {
    "memory": "transports.memory",
    "unix": "transports.sockets",
    "tcp": "transports.sockets",
    "ws": "transports.websocket",
    "wss": "transports.websocket",
    "webrtc": "transports.webrtc",
    "webrtc+ws": "transports.webrtc",
    "webrtc+wss": "transports.webrtc",
}
_transports: dict[str, Transport] = {}
#: Incoming links still in their handshake beyond which new ones are dropped at once.
_MAX_PENDING_HANDSHAKES = 1024
_lock = threading.Lock()


def register_transport(scheme: str, transport: Transport, *, replace: bool = False) -> None:
    """Route addresses ``scheme:...`` to ``transport``."""
    if not _SCHEME.match(scheme + ":"):
        raise AddressError(f"invalid scheme {scheme!r}")
    if not isinstance(transport, Transport):
        raise TypeError(f"expected a Transport, got {type(transport).__name__}")
    with _lock:
        if scheme in _transports and not replace and _transports[scheme] is not transport:
            raise ValueError(f"scheme {scheme!r} is already registered; pass replace=True")
        _transports[scheme] = transport


def registered_schemes() -> frozenset[str]:
    return frozenset(_transports)


def scheme_of(address: str) -> str:
    """The scheme of an address string, e.g. ``"tcp"`` for ``tcp://127.0.0.1:7001``."""
    if not isinstance(address, str):
        raise TypeError(f"address must be a string, not {type(address).__name__}")
    match = _SCHEME.match(address)
    if match is None:
        raise AddressError(f"address {address!r} has no scheme (e.g. tcp://127.0.0.1:7001)")
    return match.group(1)


def get_transport(scheme: str) -> Transport:
    """The transport for ``scheme``, importing a built-in transport module on first use."""
    transport = _transports.get(scheme)
    if transport is None and scheme in _BUILTIN_MODULES:
        try:
            importlib.import_module(_BUILTIN_MODULES[scheme])
        except ImportError as exc:
            raise AddressError(f"transport for {scheme!r} is unavailable: {exc}") from exc
        transport = _transports.get(scheme)
    if transport is None:
        known = ", ".join(sorted(set(_transports) | set(_BUILTIN_MODULES)))
        raise AddressError(f"no transport registered for scheme {scheme!r} (known: {known})")
    return transport


async def dial(
    address: str,
    config: LinkConfig,
    *,
    timeout: float = 10.0,
    ssl_context: ssl.SSLContext | None = None,
    expect_peer_id: int | None = None,
) -> DataChannel:
    """Connect to ``address``, handshake and authenticate; return the ready channel.

    ``timeout`` bounds the connection attempt; ``config.handshake_timeout`` bounds the
    handshake. With ``expect_peer_id`` a different peer at that address is refused.
    Raises ``OSError``/``TimeoutError`` when the peer is unreachable and a
    ``HandshakeError`` subclass when the link is refused.
    """
    transport = get_transport(scheme_of(address))
    try:
        async with asyncio.timeout(timeout):
            raw = await transport.connect(address, config, ssl_context=ssl_context)
    except TimeoutError:
        raise TimeoutError(f"connecting to {address} timed out after {timeout:g} s") from None
    accept_peer = None if expect_peer_id is None else _expecting(expect_peer_id)
    return await establish(raw, config, initiator=True, accept_peer=accept_peer)


def _expecting(expected: int) -> PeerFilter:
    def check(peer_id: int) -> str | None:
        if peer_id == expected:
            return None
        return f"expected peer {expected} at this address, reached peer {peer_id}"

    return check


class _Acceptor:
    """Runs handshake and handler for each raw channel a listener accepts."""

    def __init__(
        self, config: LinkConfig, handler: ChannelHandler, accept_peer: PeerFilter | None
    ) -> None:
        self._config = config
        self._handler = handler
        self._accept_peer = accept_peer
        self._tasks: set[asyncio.Task[None]] = set()
        self._handshaking = 0
        self._closing = False

    def accept(self, raw: DataChannel) -> None:
        if self._closing or self._handshaking >= _MAX_PENDING_HANDSHAKES:
            if not self._closing:
                logger.warning(
                    "dropping link from %s: %d handshakes already pending",
                    raw.remote_address,
                    self._handshaking,
                )
            raw_task = asyncio.get_running_loop().create_task(raw.aclose())
            self._tasks.add(raw_task)
            raw_task.add_done_callback(self._tasks.discard)
            return
        task = asyncio.get_running_loop().create_task(self._serve(raw))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, raw: DataChannel) -> None:
        self._handshaking += 1
        try:
            channel = await establish(
                raw, self._config, initiator=False, accept_peer=self._accept_peer
            )
        except HandshakeError:
            return  # establish logged the reason and closed the channel
        finally:
            self._handshaking -= 1
        try:
            await self._handler(channel)
        except Exception:
            logger.exception("handler for peer %s failed", channel.remote_peer_id)
        finally:
            await channel.aclose()

    async def aclose(self) -> None:
        self._closing = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


@asynccontextmanager
async def listen(
    address: str,
    config: LinkConfig,
    handler: ChannelHandler,
    *,
    ssl_context: ssl.SSLContext | None = None,
    accept_peer: PeerFilter | None = None,
) -> AsyncIterator[Listener]:
    """Accept links on ``address`` while the context is open.

    ``handler`` runs in its own task for every authenticated channel and the channel is
    closed when it returns. Links that fail the handshake (or whose peer id
    ``accept_peer`` refuses) are logged and dropped. The yielded ``Listener.address``
    is the bound address (the real port for ``:0``).
    """
    acceptor = _Acceptor(config, handler, accept_peer)
    transport = get_transport(scheme_of(address))
    listener = await transport.listen(address, config, acceptor.accept, ssl_context=ssl_context)
    try:
        yield listener
    finally:
        await listener.aclose()
        await acceptor.aclose()
