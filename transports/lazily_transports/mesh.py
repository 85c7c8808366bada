"""Mesh: one authenticated, self-healing link per peer, with events and metrics."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from contextlib import AsyncExitStack
from types import TracebackType

import anyio

from ._core._admission import AdmissionGate
from ._core._authentication import CredentialLookup, PeerVetter
from ._core._backoff import Backoff
from ._core._incoming import IncomingLinks
from ._core._peer_link import PeerLink
from ._core._refusal_log import RefusalLog
from .abc import LinkAttribute, Listener
from .config import LinkConfig
from .errors import UnknownPeerError
from .events import EventStream, PeerCounters
from .schemes import DEFAULT_SCHEMES, ChannelHandler, SchemeTable, listen
from .streams import LinkStream

__all__ = ["Mesh"]


class Mesh:
    """Keeps a link to every peer in ``peers`` (peer id -> address).

    Of two peers the one with the lower id dials and the higher one accepts; an
    accepted link from an id that is unknown or our own is refused during the handshake
    (before authentication) with a logged reason, and one from a peer that should have
    accepted is refused after authentication. A peer that should dial us but has not
    within ``probe_after`` seconds is probed (``lazily_transports.probe``), then with
    backoff while it stays unlinked, so that a peer refusing this node says why; probes
    from peers are answered with how we try to reach them. A probe from a peer whose
    link is up at our end means that peer lost it: the link is dropped and dialed
    again, unless ``vet_peer`` refuses the prober (another process than the one the
    link reaches), which is then told why and the link stays, or the link came up
    less than ``connect_timeout`` ago (the probe was on its way while the link was
    being set up: the prober is told the link is up). A peer never reached is logged
    once at WARNING ``unreachable_after`` seconds after the start. Links reconnect with capped,
    jittered exponential backoff. ``events`` yields ``PeerUp``, ``Frame`` and
    ``PeerDown`` in order per peer. ``send_nowait`` never blocks: it raises
    ``anyio.WouldBlock`` when the peer's bounded buffer is full and returns False
    (counting the frame as dropped) while the peer is down; frames are never carried
    over to a later connection. ``vet_peer(peer_id, features)`` checks every authenticated
    peer before its link carries a frame, for checks that need the features it announced:
    an accepted link it refuses is refused inside the handshake (the dialer is told why),
    a dialed one is closed; either way the link keeps trying. ``schemes`` maps address
    schemes to transports (default ``DEFAULT_SCHEMES``); every address is resolved when
    given, so an unknown scheme or a transport whose extra is not installed fails at once.

    With ``clients`` (a credential lookup and a handler) the listener also accepts
    client links, authenticated by their own tokens (see ``establish``): each is handed
    to the handler, never to a peer's link, so a client never carries peer traffic.
    """

    def __init__(
        self,
        config: LinkConfig,
        listen_address: str | None,
        peers: Mapping[int, str],
        *,
        ssl_context: ssl.SSLContext | None = None,
        client_ssl_context: ssl.SSLContext | None = None,
        connect_timeout: float = 5.0,
        backoff_initial: float = 0.05,
        backoff_max: float = 2.0,
        event_capacity: int = 65536,
        vet_peer: PeerVetter | None = None,
        probe_after: float | None = 0.5,
        unreachable_after: float = 10.0,
        schemes: SchemeTable | None = None,
        clients: tuple[CredentialLookup, ChannelHandler] | None = None,
    ) -> None:
        self._clients = clients
        self._schemes = DEFAULT_SCHEMES if schemes is None else schemes
        if listen_address is not None:
            self._schemes.transport_for(listen_address)
        self.config = config
        self.events = EventStream(event_capacity)
        self._listen_address = listen_address
        self._ssl_context = ssl_context
        self._client_ssl_context = client_ssl_context
        self._connect_timeout = connect_timeout
        self._backoff = (backoff_initial, backoff_max)
        self._links: dict[int, PeerLink] = {}
        #: Links given a frame since the last :meth:`flush` (only they have any to hand over).
        self._sent: dict[PeerLink, None] = {}
        self._vet = vet_peer
        self._probe_after = probe_after
        self._unreachable_after = unreachable_after
        self._incoming = IncomingLinks(config.peer_id, self._links, vet=vet_peer,
                                       connect_timeout=connect_timeout,
                                       running=lambda: self._running)
        #: Its listener's and links' refused handshakes: each reason said once.
        self._said = RefusalLog()
        self._listener: Listener | None = None
        self._stack: AsyncExitStack | None = None
        self._running = False
        for peer_id, address in peers.items():
            self._make_link(peer_id, address)

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Mesh:
        if self._stack is not None:
            raise RuntimeError("the mesh is already running")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            if self._listen_address is not None:
                self._listener = await stack.enter_async_context(
                    listen(
                        self._listen_address,
                        self.config,
                        self._serve_accepted,
                        ssl_context=self._ssl_context,
                        accept_peer=self._incoming.refusal,
                        admit=self._incoming.admit,
                        answer_probe=self._incoming.answer_probe,
                        schemes=self._schemes,
                        credentials=None if self._clients is None else self._clients[0],
                        refusals=self._said,
                    )
                )
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        self._running = True
        for link in self._links.values():
            link.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop listening, close every link and end the event stream."""
        self._running = False
        stack, self._stack = self._stack, None
        with anyio.CancelScope(shield=True):
            for link in list(self._links.values()):
                await link.aclose("mesh closed")
            if stack is not None:
                await stack.aclose()
        self.events.close()

    @property
    def listen_address(self) -> str | None:
        """The bound listening address (with the real port after ``:0``)."""
        if self._listener is not None:
            return self._listener.address
        return self._listen_address

    # -- peers ----------------------------------------------------------------------------

    @property
    def admission(self) -> AdmissionGate | None:
        """The listener's count of pending and refused unauthenticated connections."""
        return self._listener.admission if self._listener is not None else None

    def listener_stats(self) -> dict[str, int]:
        """Connections in their handshake now, refused over the caps so far, closed in
        their handshake to make room for another source's so far, and handshakes refused
        so far.

        A WebSocket listener adds those still in their HTTP upgrade.
        """
        gates = [self.admission, getattr(self._listener, "upgrades", None)]
        found = [gate for gate in gates if isinstance(gate, AdmissionGate)]
        return {
            "pending_handshakes": sum(gate.pending for gate in found),
            "refused_connections": sum(gate.refused for gate in found),
            "evicted_connections": sum(gate.evicted for gate in found),
            "refused_handshakes": sum(gate.refused_handshakes for gate in found),
        }

    @property
    def peers(self) -> dict[int, str]:
        return {peer_id: link.address for peer_id, link in self._links.items()}

    def add_peer(self, peer_id: int, address: str) -> None:
        """Start linking to a new peer."""
        if peer_id in self._links:
            raise ValueError(f"peer {peer_id} is already in the mesh")
        link = self._make_link(peer_id, address)
        if self._running:
            link.start()

    def readdress(self, peer_id: int, address: str) -> None:
        """Dial (or probe) ``peer_id`` at ``address`` from the next attempt on; a
        connection up now stays. An unknown scheme fails here, as in ``add_peer``."""
        link = self._link(peer_id)
        self._schemes.transport_for(address)
        link.readdress(address)

    def failed_here(self, peer_id: int) -> int:
        """How many dials (or probes) of ``peer_id`` at its current address ended without
        a link since it was given (``add_peer``, ``readdress``); one begun at an earlier
        address is not counted, and a link that waits to be dialed without probing
        (``probe_after=None``) counts none."""
        return self._link(peer_id).failed_here

    async def remove_peer(self, peer_id: int) -> None:
        """Close and forget a peer's link (emits ``PeerDown`` if it was up)."""
        link = self._links.pop(peer_id, None)
        if link is None:
            raise UnknownPeerError(peer_id)
        await link.aclose("peer removed")

    def disconnect(self, peer_id: int, reason: str) -> None:
        """Drop the current connection to ``peer_id`` (say, after it sent a bad frame).

        A ``PeerDown`` carrying ``reason`` follows; the link then reconnects as usual, with
        a new epoch, and nothing queued on the old connection is delivered.
        """
        self._link(peer_id).drop(reason)

    def is_up(self, peer_id: int) -> bool:
        return self._link(peer_id).up

    def epoch(self, peer_id: int) -> int:
        """Epoch of the current (or last) connection to ``peer_id``; 0 before any."""
        return self._link(peer_id).epoch

    def trouble(self, peer_id: int) -> str | None:
        """Why ``peer_id`` is not linked, as far as this side knows (None while up)."""
        return self._link(peer_id).trouble

    def trouble_since(self, peer_id: int) -> float | None:
        """When :meth:`trouble` came to say what it says (``time.time()``; None while up)."""
        return self._link(peer_id).trouble_since

    def answered(self, peer_id: int) -> bool:
        """Whether ``peer_id`` answered a dial or probe (a refusal, how it dials us) since
        its last connection ended: its process runs, whatever it said before."""
        return self._link(peer_id).answered

    def last_down(self, peer_id: int) -> str | None:
        """Why the last connection to ``peer_id`` ended, as its ``PeerDown`` said (None
        before one ended). Links end silently here: the event is how a mesh's user
        learns of a lost peer, and logs it once with what to check."""
        return self._link(peer_id).last_down

    def counters(self, peer_id: int) -> PeerCounters:
        return self._link(peer_id).counters

    def stats(self) -> dict[int, PeerCounters]:
        return {peer_id: link.counters for peer_id, link in self._links.items()}

    # -- sending --------------------------------------------------------------------------

    def send_nowait(self, peer_id: int, frame: bytes) -> bool:
        """Queue ``frame`` for ``peer_id`` without waiting.

        Returns False when the peer is down (the frame is dropped and counted). Raises
        ``anyio.WouldBlock`` when the peer's send buffer is full, ``UnknownPeerError``
        for an id outside the mesh and ``FrameTooLargeError`` above the frame ceiling.
        """
        try:
            link = self._links[peer_id]
        except KeyError:  # a subscript: the cheapest lookup of the hot path
            raise UnknownPeerError(peer_id) from None
        self._sent[link] = None
        return link.send_nowait(frame)

    def send_held(self, peer_id: int, frame: bytes) -> bool:
        """``send_nowait``, except that the frame waits for :meth:`flush` (the caller's to
        call before it yields to the loop) rather than being written later in this loop
        iteration: frames sent together leave without a callback of their own."""
        try:
            link = self._links[peer_id]
        except KeyError:  # a subscript: the cheapest lookup of the hot path
            raise UnknownPeerError(peer_id) from None
        self._sent[link] = None
        return link.send_nowait(frame, True)

    def send_ready(self, peer_id: int) -> bool:
        """Whether ``send_nowait(peer_id, ...)`` would queue a frame now: the peer is up
        and its send buffer not full (False for an id outside the mesh)."""
        link = self._links.get(peer_id)
        return link is not None and link.send_ready()

    def flush(self) -> None:
        """Hand every frame queued by ``send_nowait`` to its connection now (frames are
        otherwise written together later in the loop iteration)."""
        sent = self._sent
        if sent:
            self._sent = {}
            for link in sent:
                link.flush()

    async def send(self, peer_id: int, frame: bytes) -> bool:
        """Like ``send_nowait`` but waits for buffer space instead of raising WouldBlock."""
        link = self._links.get(peer_id)
        if link is None:
            raise UnknownPeerError(peer_id)
        while True:
            self._sent[link] = None
            try:
                return link.send_nowait(frame)
            except anyio.WouldBlock:
                await link.wait_send_ready()

    def broadcast_nowait(self, frame: bytes) -> dict[int, bool]:
        """``send_nowait`` to every peer; a full buffer counts as not sent (and dropped)."""
        sent: dict[int, bool] = {}
        for peer_id, link in self._links.items():
            try:
                sent[peer_id] = link.send_nowait(frame)
            except anyio.WouldBlock:
                link.counters.frames_dropped += 1
                sent[peer_id] = False
        return sent

    # -- internals ------------------------------------------------------------------------

    def _link(self, peer_id: int) -> PeerLink:
        link = self._links.get(peer_id)
        if link is None:
            raise UnknownPeerError(peer_id)
        return link

    def _make_link(self, peer_id: int, address: str) -> PeerLink:
        if isinstance(peer_id, bool) or not isinstance(peer_id, int):
            raise TypeError(f"peer ids must be ints, got {peer_id!r}")
        if peer_id == self.config.peer_id:
            raise ValueError(f"peer {peer_id} is this node's own id; list only the other nodes")
        self._schemes.transport_for(address)
        link = PeerLink(
            peer_id,
            address,
            config=self.config,
            events=self.events,
            dials=self.config.peer_id < peer_id,
            backoff=Backoff(*self._backoff),
            connect_timeout=self._connect_timeout,
            ssl_context=self._client_ssl_context,
            schemes=self._schemes,
            vet=self._vet,
            probe_after=self._probe_after,
            unreachable_after=self._unreachable_after,
            refusals=self._said,
        )
        self._links[peer_id] = link
        return link

    async def _serve_accepted(self, channel: LinkStream) -> None:
        if channel.extra(LinkAttribute.credential, None) is not None:
            if self._clients is not None and self._running:
                await self._clients[1](channel)
            return
        link = self._links.get(channel.extra(LinkAttribute.peer_id))
        if link is None or link.dials or not self._running:
            return
        await link.serve(channel)
