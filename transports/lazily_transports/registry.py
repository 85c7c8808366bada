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
from .admission import AdmissionGate, LogLimiter
from .authentication import PeerFilter, ProbeAnswer, establish, probe_channel
from .config import LinkConfig
from .errors import AddressError, HandshakeError, ProbeAnswered

__all__ = [
    "ChannelHandler",
    "dial",
    "get_transport",
    "listen",
    "probe",
    "register_transport",
    "registered_schemes",
    "scheme_of",
]

logger = logging.getLogger("lazily_transports.listener")

#: Receives each authenticated channel; the channel is closed when it returns.
ChannelHandler = Callable[[DataChannel], Awaitable[None]]

_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
_BUILTIN_MODULES = {
    "memory": "lazily_transports.memory",
    "unix": "lazily_transports.sockets",
    "tcp": "lazily_transports.sockets",
    "ws": "lazily_transports.websocket",
    "wss": "lazily_transports.websocket",
    "webrtc": "lazily_transports.webrtc",
    "webrtc+ws": "lazily_transports.webrtc",
    "webrtc+wss": "lazily_transports.webrtc",
}
_transports: dict[str, Transport] = {}
_lock = threading.Lock()
#: Refused incoming handshakes logged per interval; the rest are counted in the next line.
_REFUSALS_LOGGED = 10


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


async def probe(
    address: str,
    config: LinkConfig,
    *,
    timeout: float = 10.0,
    ssl_context: ssl.SSLContext | None = None,
    expect_peer_id: int | None = None,
) -> str:
    """Ask the node at ``address`` whether it would accept a link from us, carrying none.

    The peer runs its usual checks (cluster name, membership, secret) and refuses
    with the first that fails, raised here as a ``HandshakeError`` naming the field;
    when all pass it returns the peer's note (say, the address it dials us at) and
    closes. Raises ``OSError``/``TimeoutError`` when the peer is unreachable.
    """
    transport = get_transport(scheme_of(address))
    try:
        async with asyncio.timeout(timeout):
            raw = await transport.connect(address, config, ssl_context=ssl_context)
    except TimeoutError:
        raise TimeoutError(f"connecting to {address} timed out after {timeout:g} s") from None
    accept_peer = None if expect_peer_id is None else _expecting(expect_peer_id)
    return await probe_channel(raw, config, accept_peer=accept_peer)


def _expecting(expected: int) -> PeerFilter:
    def check(peer_id: int) -> str | None:
        if peer_id == expected:
            return None
        return f"expected peer {expected} at this address, reached peer {peer_id}"

    return check


class _Acceptor:
    """Runs handshake and handler for each raw channel a listener accepts.

    Connections over the admission caps are closed at once; refused handshakes are
    logged at most ``_REFUSALS_LOGGED`` times per interval.
    """

    def __init__(
        self,
        config: LinkConfig,
        handler: ChannelHandler,
        accept_peer: PeerFilter | None,
        admit: PeerFilter | None,
        answer_probe: ProbeAnswer | None,
        label: str,
    ) -> None:
        self._config = config
        self._handler = handler
        self._accept_peer = accept_peer
        self._admit = admit
        self._answer_probe = answer_probe
        self.gate = AdmissionGate(
            config.max_pending_handshakes, config.max_pending_per_source, label=label
        )
        self._refusals = LogLimiter(burst=_REFUSALS_LOGGED)
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def accept(self, raw: DataChannel) -> None:
        loop = asyncio.get_running_loop()
        if self._closing or not self.gate.admit(raw.source):
            task = loop.create_task(raw.aclose())
        else:
            task = loop.create_task(self._serve(raw))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, raw: DataChannel) -> None:
        source = raw.source
        try:
            channel = await establish(
                raw,
                self._config,
                initiator=False,
                accept_peer=self._accept_peer,
                admit=self._admit,
                answer_probe=self._answer_probe,
                on_failure=self._log_refusal,
            )
        except HandshakeError:
            return  # establish reported it and closed the channel
        except ProbeAnswered as answered:
            logger.debug("answered a probe from peer %d", answered.peer_id)
            return
        finally:
            self.gate.release(source)
        try:
            await self._handler(channel)
        except Exception:
            logger.exception("handler for peer %s failed", channel.remote_peer_id)
        finally:
            await channel.aclose()

    def _log_refusal(self, raw: DataChannel, error: HandshakeError) -> None:
        if not self._refusals.allow():
            return
        unlogged = self._refusals.take_suppressed()
        if unlogged:
            logger.warning("%d more refused handshakes were not logged", unlogged)
        logging.getLogger("lazily_transports.handshake").warning(
            "handshake with %s refused: %s", raw.remote_address, error
        )

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
    admit: PeerFilter | None = None,
    answer_probe: ProbeAnswer | None = None,
) -> AsyncIterator[Listener]:
    """Accept links on ``address`` while the context is open.

    ``handler`` runs in its own task for every authenticated channel and the channel is
    closed when it returns. Links that fail the handshake (or whose peer id
    ``accept_peer`` refuses before authentication, or ``admit`` after it) are logged
    and dropped; probes are answered with ``answer_probe``'s note. At most
    ``config.max_pending_handshakes`` connections (``config.max_pending_per_source``
    per source) may be in their handshake; more are closed at once and counted in
    ``Listener.admission``. The yielded ``Listener.address`` is the bound address (the
    real port for ``:0``).
    """
    acceptor = _Acceptor(config, handler, accept_peer, admit, answer_probe, label=address)
    transport = get_transport(scheme_of(address))
    listener = await transport.listen(address, config, acceptor.accept, ssl_context=ssl_context)
    listener.admission = acceptor.gate
    try:
        yield listener
    finally:
        await listener.aclose()
        await acceptor.aclose()
