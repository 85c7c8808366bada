"""Mesh: one authenticated, self-healing link per peer, with events and metrics."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from contextlib import AsyncExitStack
from types import TracebackType

import anyio

from ._abc import DataChannel, Listener
from .backoff import Backoff
from .config import LinkConfig
from .errors import UnknownPeerError
from .events import EventStream
from .link import ChannelVetter, Link, PeerCounters
from .registry import listen, scheme_of

__all__ = ["Mesh"]

logger = logging.getLogger("transports.mesh")


class Mesh:
    """Keeps a link to every peer in ``peers`` (peer id -> address).

    Of two peers the one with the lower id dials and the higher one accepts; an
    accepted link from an id that is unknown, our own, or lower-numbered-must-accept is
    refused during the handshake with a logged reason. Links reconnect with capped,
    jittered exponential backoff. ``events`` yields ``PeerUp``, ``Frame`` and
    ``PeerDown`` in order per peer. ``send_nowait`` never blocks: it raises
    ``anyio.WouldBlock`` when the peer's bounded buffer is full and returns False
    (counting the frame as dropped) while the peer is down; frames are never carried
    over to a later connection. ``vet_channel`` sees every authenticated connection,
    dialed or accepted, before it carries a frame; returning a reason closes it (the
    link keeps trying), for checks that need the peer's handshake, such as its features.
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
        vet_channel: ChannelVetter | None = None,
    ) -> None:
        if listen_address is not None:
            scheme_of(listen_address)
        self.config = config
        self.events = EventStream(event_capacity)
        self._listen_address = listen_address
        self._ssl_context = ssl_context
        self._client_ssl_context = client_ssl_context
        self._connect_timeout = connect_timeout
        self._backoff = (backoff_initial, backoff_max)
        self._links: dict[int, Link] = {}
        self._vet = vet_channel
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
                        accept_peer=self._refusal,
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
    def peers(self) -> dict[int, str]:
        return {peer_id: link.address for peer_id, link in self._links.items()}

    def add_peer(self, peer_id: int, address: str) -> None:
        """Start linking to a new peer."""
        if peer_id in self._links:
            raise ValueError(f"peer {peer_id} is already in the mesh")
        link = self._make_link(peer_id, address)
        if self._running:
            link.start()

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
        link = self._links.get(peer_id)
        if link is None:
            raise UnknownPeerError(peer_id)
        return link.send_nowait(frame)

    async def send(self, peer_id: int, frame: bytes) -> bool:
        """Like ``send_nowait`` but waits for buffer space instead of raising WouldBlock."""
        link = self._links.get(peer_id)
        if link is None:
            raise UnknownPeerError(peer_id)
        while True:
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

    def _link(self, peer_id: int) -> Link:
        link = self._links.get(peer_id)
        if link is None:
            raise UnknownPeerError(peer_id)
        return link

    def _make_link(self, peer_id: int, address: str) -> Link:
        if isinstance(peer_id, bool) or not isinstance(peer_id, int):
            raise TypeError(f"peer ids must be ints, got {peer_id!r}")
        if peer_id == self.config.peer_id:
            raise ValueError(f"peer {peer_id} is this node's own id; list only the other nodes")
        scheme_of(address)
        link = Link(
            peer_id,
            address,
            config=self.config,
            events=self.events,
            dials=self.config.peer_id < peer_id,
            backoff=Backoff(*self._backoff),
            connect_timeout=self._connect_timeout,
            ssl_context=self._client_ssl_context,
            vet=self._vet,
        )
        self._links[peer_id] = link
        return link

    def _refusal(self, peer_id: int) -> str | None:
        """Why an incoming link announcing ``peer_id`` is refused, or None to accept it."""
        link = self._links.get(peer_id)
        if not self._running:
            reason = "this node is shutting down"
        elif link is None:
            reason = f"peer {peer_id} is not a member of this mesh"
        elif link.dials:
            reason = (
                f"peer {peer_id} must accept links from the lower id {self.config.peer_id}, "
                "not dial"
            )
        else:
            return None
        logger.warning("refusing incoming link: %s", reason)
        return reason

    async def _serve_accepted(self, channel: DataChannel) -> None:
        link = self._links.get(channel.remote_peer_id)
        if link is None or link.dials or not self._running:
            return
        await link.serve(channel)
