"""Address schemes mapped to transports (``SchemeTable``), and ``dial`` / ``listen`` / ``probe``."""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

from ._core._acceptor import Acceptor
from ._core._authentication import (
    CredentialLookup,
    FailureReport,
    PeerFilter,
    PeerVetter,
    ProbeAnswer,
    probe_channel,
)
from ._core._lookups import host_of, lookup
from ._core._probe_notes import lookup_timed_out, unresolved
from ._core._refusal_log import RefusalLog
from .abc import DataChannel, HostTransport, Listener, Transport
from .config import LinkConfig
from .errors import AddressError, LookupTimeoutError, MissingDependencyError, shown
from .streams import LinkStream, establish
from .tls import report_refusals

__all__ = [
    "DEFAULT_SCHEMES",
    "ChannelHandler",
    "SchemeTable",
    "TransportFactory",
    "dial",
    "listen",
    "probe",
    "scheme_of",
]

#: Receives each authenticated link; the link is closed when it returns.
ChannelHandler = Callable[[LinkStream], Awaitable[None]]
#: Makes a transport on first use of one of its schemes.
TransportFactory = Callable[[], Transport]

_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")


def scheme_of(address: str) -> str:
    """The scheme of an address string, e.g. ``"tcp"`` for ``tcp://127.0.0.1:7001``."""
    if not isinstance(address, str):
        raise TypeError(f"address must be a string, not {type(address).__name__}")
    match = _SCHEME.match(address)
    if match is None:
        raise AddressError(f"address {shown(address)} has no scheme (e.g. tcp://127.0.0.1:7001)")
    return match.group(1)


class _Entry:
    """One transport, made on first use and shared by every scheme and table naming it."""

    __slots__ = ("_factory", "_lock", "_transport")

    def __init__(self, source: Transport | TransportFactory) -> None:
        self._transport = source if isinstance(source, Transport) else None
        self._factory = None if isinstance(source, Transport) else source
        self._lock = threading.Lock()

    def get(self) -> Transport:
        transport = self._transport
        if transport is not None:
            return transport
        with self._lock:
            if self._transport is None:
                assert self._factory is not None
                made = self._factory()
                if not isinstance(made, Transport):
                    raise TypeError(f"transport factory returned {type(made).__name__}")
                self._transport = made
            return self._transport


class SchemeTable:
    """Which transport opens addresses of which scheme.

    ``entries`` maps schemes to transports, or to factories called once, on the first
    use of any scheme they serve (a factory listed under several schemes makes one
    transport for all of them). ``SchemeTable.builtin()`` maps ``memory``, ``unix``,
    ``tcp``, ``ws``, ``wss`` and ``webrtc``, ``webrtc+ws``, ``webrtc+wss``, importing
    each module on first use; ``DEFAULT_SCHEMES`` is the one ``dial``, ``listen``,
    ``probe`` and ``Mesh`` use unless given another. A table is not changed once made:
    ``with_transport`` returns a copy that shares the transports already listed, so
    a test double is injected by passing such a copy (or a table of its own).
    """

    def __init__(self, entries: Mapping[str, Transport | TransportFactory] | None = None) -> None:
        self._entries: dict[str, _Entry] = {}
        made: dict[int, _Entry] = {}
        for scheme, source in (entries or {}).items():
            _check_scheme(scheme)
            if not isinstance(source, Transport) and not callable(source):
                raise TypeError(
                    f"scheme {shown(scheme)}: expected a Transport or a factory, "
                    f"got {type(source).__name__}"
                )
            entry = made.get(id(source))
            if entry is None:
                entry = made[id(source)] = _Entry(source)
            self._entries[scheme] = entry

    @classmethod
    def builtin(cls) -> SchemeTable:
        """A new table of the built-in transports (none is imported before its first use)."""
        return cls(
            {
                "memory": _memory,
                "unix": _sockets,
                "tcp": _sockets,
                "tls": _sockets,
                "ws": _websocket,
                "wss": _websocket,
                "webrtc": _webrtc,
                "webrtc+ws": _webrtc,
                "webrtc+wss": _webrtc,
            }
        )

    def with_transport(
        self, scheme: str, transport: Transport | TransportFactory
    ) -> SchemeTable:
        """A copy of this table with ``scheme`` mapped to ``transport`` (added or replaced)."""
        table = SchemeTable({scheme: transport})
        table._entries = {**self._entries, **table._entries}
        return table

    @property
    def schemes(self) -> frozenset[str]:
        return frozenset(self._entries)

    def __contains__(self, scheme: object) -> bool:
        return scheme in self._entries

    def transport(self, scheme: str) -> Transport:
        """The transport for ``scheme``, made now if this is its first use.

        Raises ``AddressError`` for a scheme the table lacks and
        ``MissingDependencyError`` when the transport needs an extra not installed.
        """
        entry = self._entries.get(scheme)
        if entry is None:
            known = ", ".join(sorted(self._entries))
            raise AddressError(f"no transport for scheme {shown(scheme)} (known: {known})")
        try:
            return entry.get()
        except MissingDependencyError as exc:
            raise MissingDependencyError(f"{scheme}:// addresses", exc.extra, exc.package) from exc

    def transport_for(self, address: str) -> Transport:
        """The transport for ``address``'s scheme."""
        return self.transport(scheme_of(address))

    def __repr__(self) -> str:
        return f"SchemeTable({sorted(self._entries)})"


def _check_scheme(scheme: str) -> None:
    if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme + ":"):
        raise AddressError(f"invalid scheme {shown(scheme)}")


def _memory() -> Transport:
    from .memory import MemoryTransport

    return MemoryTransport()


def _sockets() -> Transport:
    from .sockets import SocketTransport

    return SocketTransport()


def _websocket() -> Transport:
    from .websocket import WebSocketTransport

    return WebSocketTransport()


def _webrtc() -> Transport:
    from . import webrtc

    return webrtc.WebRTCTransport()  # MissingDependencyError without the webrtc extra


DEFAULT_SCHEMES = SchemeTable.builtin()


async def dial(
    address: str,
    config: LinkConfig,
    *,
    timeout: float = 10.0,
    ssl_context: ssl.SSLContext | None = None,
    expect_peer_id: int | None = None,
    schemes: SchemeTable | None = None,
    on_failure: FailureReport | None = None,
) -> LinkStream:
    """Connect to ``address``, handshake and authenticate; return the link.

    ``timeout`` bounds the connection attempt; ``config.handshake_timeout`` bounds the
    handshake. With ``expect_peer_id`` a different peer at that address is refused.
    ``schemes`` picks the transport (default ``DEFAULT_SCHEMES``).
    Raises ``OSError``/``TimeoutError`` when the peer is unreachable and a
    ``HandshakeError`` subclass when the link is refused (logged, or passed to
    ``on_failure`` instead when given).
    """
    raw = await _connected(address, config, timeout, ssl_context, schemes)
    accept_peer = None if expect_peer_id is None else _expecting(expect_peer_id)
    return await establish(raw, config, initiator=True, accept_peer=accept_peer,
                           on_failure=on_failure)


async def probe(
    address: str,
    config: LinkConfig,
    *,
    timeout: float = 10.0,
    ssl_context: ssl.SSLContext | None = None,
    expect_peer_id: int | None = None,
    schemes: SchemeTable | None = None,
) -> str:
    """Ask the node at ``address`` whether it would accept a link from us, carrying none.

    The peer runs its usual checks (cluster name, membership, secret) and refuses
    with the first that fails, raised here as a ``HandshakeError`` naming the field;
    when all pass it returns the peer's note (say, the address it dials us at) and
    closes. Raises ``OSError``/``TimeoutError`` when the peer is unreachable.
    """
    raw = await _connected(address, config, timeout, ssl_context, schemes)
    accept_peer = None if expect_peer_id is None else _expecting(expect_peer_id)
    return await probe_channel(raw, config, accept_peer=accept_peer)


async def _connected(address: str, config: LinkConfig, timeout: float,
                     ssl_context: ssl.SSLContext | None, schemes: SchemeTable | None
                     ) -> DataChannel:
    """A raw channel to ``address`` (handshake not yet run), connected within ``timeout``
    seconds by the transport ``schemes`` (default ``DEFAULT_SCHEMES``) gives its scheme;
    a host name is looked up once, a :class:`HostTransport` connecting to what was found.
    A host name that does not resolve raises ``socket.gaierror`` naming the address, one
    whose lookup takes the whole ``timeout`` :class:`LookupTimeoutError`."""
    transport = (DEFAULT_SCHEMES if schemes is None else schemes).transport_for(address)
    named = host_of(address)
    found = None
    try:
        async with asyncio.timeout(timeout):
            if named is not None:  # one lookup of a name in flight (see _lookups)
                found = await lookup(*named)
            if found is not None and isinstance(transport, HostTransport):
                return await transport.connect_to(address, config, found,
                                                  ssl_context=ssl_context)
            return await transport.connect(address, config, ssl_context=ssl_context)
    except TimeoutError:
        if named is not None and found is None:
            raise LookupTimeoutError(lookup_timed_out(address, timeout)) from None
        raise TimeoutError(f"connecting to {address} timed out after {timeout:g} s") from None
    except socket.gaierror as exc:
        raise socket.gaierror(exc.errno, unresolved(address, exc.strerror or str(exc))) from None


def _expecting(expected: int) -> PeerFilter:
    def check(peer_id: int) -> str | None:
        if peer_id == expected:
            return None
        return f"expected peer {expected} at this address, reached peer {peer_id}"

    return check


@asynccontextmanager
async def listen(
    address: str,
    config: LinkConfig,
    handler: ChannelHandler,
    *,
    ssl_context: ssl.SSLContext | None = None,
    accept_peer: PeerFilter | None = None,
    admit: PeerVetter | None = None,
    answer_probe: ProbeAnswer | None = None,
    schemes: SchemeTable | None = None,
    credentials: CredentialLookup | None = None,
    refusals: RefusalLog | None = None,
) -> AsyncIterator[Listener]:
    """Accept links on ``address`` while the context is open.

    ``handler`` runs in its own task for every authenticated link (a ``LinkStream``),
    which is closed when it returns. Links that fail the handshake (or whose peer id
    ``accept_peer`` refuses before authentication, or ``admit`` after it) are logged
    and dropped; probes are answered with ``answer_probe``'s note. At most
    ``config.max_pending_handshakes`` connections (``config.max_pending_per_source``
    per source) may be in their handshake; more are closed at once and counted in
    ``Listener.admission``. The yielded ``Listener.address`` is the bound address (the
    real port for ``:0``). ``schemes`` picks the transport (default ``DEFAULT_SCHEMES``).
    ``credentials`` admits client links too (see ``establish``); the handler tells
    them apart by ``LinkAttribute.credential``. A refusal's reason is logged at WARNING
    once, then at DEBUG until a link is established (``refusals``, which a mesh shares
    with its dialers).
    """
    acceptor = Acceptor(config, handler, accept_peer, admit, answer_probe, label=address,
                        credentials=credentials, refusals=refusals)
    transport = (DEFAULT_SCHEMES if schemes is None else schemes).transport_for(address)
    if ssl_context is not None:
        report_refusals(ssl_context)  # a refused TLS handshake is logged, with its cause
    listener = await transport.listen(address, config, acceptor.accept, ssl_context=ssl_context)
    listener.admission = acceptor.gate
    try:
        yield listener
    finally:
        await listener.aclose()
        await acceptor.aclose()
