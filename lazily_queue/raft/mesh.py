"""MeshNetwork: the driver's network over ``lazily_transports.Mesh`` (authenticated links).

Node ids are the links' peer ids (unsigned 64-bit integers). Every link requires the
handshake features of :mod:`.features` (:data:`REQUIRED_FEATURES`, re-exported here) and
mutual HMAC authentication before any Raft frame is accepted.

Each data directory has a random *incarnation*: a node refuses a second process of a
member, or a removed member's, by it (see :mod:`.incarnations`).

Each process also announces a random process id and keeps its links alive; a second
process claiming a member whose link is live is refused (see :mod:`.link_identity`).
It announces the optional :data:`GOODBYE_FEATURE` and :data:`TRANSFER_FEATURE` too: it
says goodbye when it stops cleanly (:meth:`MeshNetwork.say_goodbye`), and names the
target of a leadership transfer it starts (:meth:`MeshNetwork.tell_transfer`); see
:mod:`.link_messages`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable, Mapping

import anyio
from lazily_transports import (
    DEFAULT_CLIENT_MAX_FRAME_SIZE,
    DEFAULT_FEATURES,
    DEFAULT_MAX_PENDING_HANDSHAKES,
    DEFAULT_MAX_PENDING_PER_SOURCE,
    ChannelHandler,
    CredentialLookup,
    Frame,
    FrameTooLargeError,
    LinkConfig,
    Mesh,
    MeshEvent,
    PeerDown,
    PeerUp,
    SchemeTable,
    UnknownPeerError,
)

from ..errors import InvalidConfiguration, shown
from .features import (
    CLIENT_EPHEMERAL_FEATURE,
    CLIENT_REFUSALS_FEATURE,
    CLIENT_SESSIONS_FEATURE,
    DEDUP_FEATURE,
    GOODBYE_FEATURE,
    GROUP_RUN_SNAPSHOT_FEATURE,
    GROUPS_FEATURE,
    HEADERS_FEATURE,
    LIMITS_FEATURE,
    MEMBER_FORGET_FEATURE,
    MESSAGES_FEATURE,
    OPTIONAL_FEATURES,
    PREVOTE_FEATURE,
    QUEUE_OPTIONS_FEATURE,
    RAFT_FEATURE,
    RECEIPTS_TOTAL_FEATURE,
    REPLAY_TIME_FEATURE,
    REQUIRED_FEATURES,
    SESSION_END_FEATURE,
    SESSION_KEPT_BYTES_FEATURE,
    SESSION_REGISTER_FEATURE,
    SUBSCRIBER_DELETE_FEATURE,
    TOPIC_OPTIONS_FEATURE,
    TRANSFER_FEATURE,
    VALUES_FEATURE,
    WORK_OPTIONS_FEATURE,
)
from .incarnations import INCARNATION, RETIRED_KEPT, Incarnations
from .link_identity import KEEPALIVE, LinkIdentity
from .link_messages import LINK_MESSAGE, LinkMessages
from .network import BatchHandler, FrameHandler, PeerHandler

__all__ = [
    "CLIENT_EPHEMERAL_FEATURE",
    "CLIENT_REFUSALS_FEATURE",
    "CLIENT_SESSIONS_FEATURE",
    "DEDUP_FEATURE",
    "GOODBYE_FEATURE",
    "GROUPS_FEATURE",
    "GROUP_RUN_SNAPSHOT_FEATURE",
    "HEADERS_FEATURE",
    "INCARNATION",
    "LIMITS_FEATURE",
    "MEMBER_FORGET_FEATURE",
    "MESSAGES_FEATURE",
    "OPTIONAL_FEATURES",
    "PREVOTE_FEATURE",
    "QUEUE_OPTIONS_FEATURE",
    "RAFT_FEATURE",
    "RECEIPTS_TOTAL_FEATURE",
    "REPLAY_TIME_FEATURE",
    "REQUIRED_FEATURES",
    "RETIRED_KEPT",
    "SESSION_END_FEATURE",
    "SESSION_KEPT_BYTES_FEATURE",
    "SESSION_REGISTER_FEATURE",
    "SUBSCRIBER_DELETE_FEATURE",
    "TOPIC_OPTIONS_FEATURE",
    "TRANSFER_FEATURE",
    "VALUES_FEATURE",
    "WORK_OPTIONS_FEATURE",
    "MeshNetwork",
    "node_number",
]

log = logging.getLogger(__name__)



def node_number(node_id: str) -> int:
    """The integer link id of a node id; node ids must be integers 0..2**64-1."""
    try:
        number = int(node_id)
    except ValueError:
        raise InvalidConfiguration(
            f"node id {shown(node_id)} is not an integer; networked nodes use integer ids "
            "(they are the authenticated peer ids of the links)"
        ) from None
    if not 0 <= number < 2**64 or str(number) != str(node_id).strip():
        raise InvalidConfiguration(f"node id {shown(node_id)} must be an integer in 0..2**64-1")
    return number


class MeshNetwork:
    """A :class:`~lazily_queue.raft.network.RaftNetwork` over authenticated mesh links."""

    def __init__(
        self,
        node_id: str,
        *,
        listen: str,
        peers: Mapping[str, str],
        cluster: str,
        secret: bytes | None,
        allow_unauthenticated: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        client_ssl_context: ssl.SSLContext | None = None,
        incarnation: str = "",
        pins: Mapping[str, str] | None = None,
        on_pin: Callable[[dict[str, str]], None] | None = None,
        retired: Mapping[str, list[str]] | None = None,
        on_retire: Callable[[dict[str, list[str]]], None] | None = None,
        clients: tuple[CredentialLookup, ChannelHandler] | None = None,
        client_max_frame_size: int = DEFAULT_CLIENT_MAX_FRAME_SIZE,
        pending: tuple[int, int] = (DEFAULT_MAX_PENDING_HANDSHAKES,
                                    DEFAULT_MAX_PENDING_PER_SOURCE),
        schemes: SchemeTable | None = None,
        live_window: float = 1.2,
    ) -> None:
        """``clients`` (a token lookup and a handler) also accepts client links on the
        listen address, handed to the handler, never to Raft, with frames of at most
        ``client_max_frame_size``; ``pending`` caps its connections in their handshake
        (in all and per source, :mod:`..pending_caps`). A link that carried nothing for
        ``live_window`` seconds (about an election timeout) may be replaced by another
        process of the same member."""
        if secret is None and not allow_unauthenticated:
            raise InvalidConfiguration(
                "a cluster secret is required: pass secret=... (the same on every node; "
                "read it from an environment variable or a file), or "
                "allow_unauthenticated=True for a test cluster"
            )
        self.node_id = node_id
        self.incarnation = incarnation
        self.incarnations = Incarnations(pins, on_pin, retired, on_retire)
        self.identity = LinkIdentity(node_id, live_window, self._is_up)
        features = (DEFAULT_FEATURES | REQUIRED_FEATURES | OPTIONAL_FEATURES
                    | self.identity.features)
        if incarnation:
            features |= {INCARNATION + incarnation}
        self.messages = LinkMessages(self._send_message, lambda: self._mesh.flush(),
                                     frozenset(features))
        self.goodbyes, self.transfers = self.messages.goodbyes, self.messages.transfers
        self._config = LinkConfig(
            peer_id=node_number(node_id),
            session_id=cluster,
            secret=secret,
            allow_unauthenticated=allow_unauthenticated,
            features=frozenset(features),
            required_features=REQUIRED_FEATURES,
            client_max_frame_size=client_max_frame_size,
            max_pending_handshakes=pending[0],
            max_pending_per_source=pending[1],
        )
        self._mesh = Mesh(
            self._config,
            listen,
            {node_number(p): a for p, a in peers.items() if p != node_id},
            ssl_context=ssl_context,
            client_ssl_context=client_ssl_context,
            vet_peer=self._vet,
            clients=clients,
            schemes=schemes,
        )
        self._on_frame: FrameHandler | None = None
        self._on_peer: PeerHandler | None = None
        self._on_batch: BatchHandler | None = None
        self._pump: asyncio.Task[None] | None = None
        self._keepalive: asyncio.Task[None] | None = None
        self._unflushed = False  # send queued frames that flush has not handed over yet
        self.dropped = 0

    @property
    def mesh(self) -> Mesh:
        return self._mesh

    @property
    def listen_address(self) -> str | None:
        return self._mesh.listen_address

    def set_handlers(
        self, on_frame: FrameHandler, on_peer: PeerHandler, on_batch: BatchHandler | None = None
    ) -> None:
        self._on_frame, self._on_peer, self._on_batch = on_frame, on_peer, on_batch

    def send(self, peer_id: str, frame: bytes) -> None:
        self._unflushed = True
        try:
            if not self._mesh.send_held(int(peer_id), frame):
                self.dropped += 1
        except anyio.WouldBlock:
            self.dropped += 1
        except (UnknownPeerError, FrameTooLargeError) as exc:
            self.dropped += 1
            log.warning("node %s: frame to %s dropped: %s", self.node_id, peer_id, exc)

    def flush(self) -> None:
        """Hand what :meth:`send` queued to the links now (nothing to do when it queued
        nothing since the last flush: the links hand over other frames, keepalives,
        themselves later in the loop iteration)."""
        if self._unflushed:
            self._unflushed = False
            self._mesh.flush()

    def send_ready(self, peer_id: str) -> bool:
        try:
            return self._mesh.send_ready(int(peer_id))
        except ValueError:
            return False

    def add_peer(self, peer_id: str, address: str | None) -> None:
        number = node_number(peer_id)
        if number in self._mesh.peers or peer_id == self.node_id:
            return
        if address is None:
            log.warning("node %s: member %s has no known address yet; it is linked once "
                        "the replicated address applies here", self.node_id, peer_id)
            return
        self._mesh.add_peer(number, address)

    def _is_up(self, peer: str) -> bool:
        try:
            return self._mesh.is_up(int(peer))
        except UnknownPeerError:
            return False

    def _vet(self, peer_id: int, features: frozenset[str]) -> str | None:
        refusal = (self.incarnations.vet(str(peer_id), features) if self.incarnation
                   else None)
        refusal = refusal or self.identity.vet(str(peer_id), features)
        if refusal is None:
            self.messages.linked(str(peer_id), features)
        return refusal

    def say_goodbye(self) -> list[str]:
        """Tell every linked peer that announced the goodbye feature that this member is
        stopping (:mod:`.goodbye`), once; returns the peers told (none when it said so
        already)."""
        return self.messages.say_goodbye()

    def tell_transfer(self, term: int, target: str) -> list[str]:
        """Tell every linked peer that announced the transfer feature that this member,
        leader of ``term``, starts handing leadership to ``target``
        (:mod:`.transfer_notice`); returns the peers told."""
        return self.messages.tell_transfer(term, target)

    def _send_message(self, peer: str, frame: bytes) -> bool:
        try:
            return bool(self._mesh.send_nowait(int(peer), frame))
        except (anyio.WouldBlock, UnknownPeerError):
            return False  # a full buffer: that peer logs what follows as before

    def remove_peer(self, peer_id: str) -> None:
        self.incarnations.retire(peer_id)
        self.identity.forget(peer_id)
        self.messages.forget(peer_id)
        number = node_number(peer_id)
        if number in self._mesh.peers:
            task = asyncio.ensure_future(self._mesh.remove_peer(number))
            task.add_done_callback(lambda t: t.exception())

    def close_peer(self, peer_id: str, reason: str) -> None:
        log.warning("node %s: closing the link to %s: %s", self.node_id, peer_id, reason)
        try:
            self._mesh.disconnect(int(peer_id), reason)
        except UnknownPeerError:
            pass

    async def start(self) -> None:
        await self._mesh.__aenter__()
        self._mesh.events.set_listener(self._take)
        self._pump = asyncio.create_task(self._run(), name=f"lazily-mesh-{self.node_id}")
        self._keepalive = asyncio.create_task(self._keep_alive(),
                                              name=f"lazily-keepalive-{self.node_id}")

    async def stop(self) -> None:
        self._mesh.events.set_listener(None)
        await self._mesh.aclose()
        for task in (self._pump, self._keepalive):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._pump = self._keepalive = None

    async def _keep_alive(self) -> None:
        """A keepalive to every peer that asked for them, every quarter window."""
        while True:
            await asyncio.sleep(self.identity.window / 4)
            for peer in list(self.identity.keepalive):
                try:
                    self._mesh.send_nowait(int(peer), KEEPALIVE)
                except (anyio.WouldBlock, UnknownPeerError):
                    pass  # a full buffer is traffic enough; a removed peer needs none

    def _take(self) -> None:
        """Frames handed over as they are queued (no task switch per frame); each run is
        followed by ``on_batch(True)`` (the driver steps at once, or leaves it to the
        step it has pending)."""
        events = self._mesh.events
        while batch := events.take_nowait():
            self._handle(batch)

    async def _run(self) -> None:
        """Events the listener left (queued before it was set)."""
        events = self._mesh.events
        while True:
            try:
                batch = await events.receive_batch()
            except anyio.EndOfStream:
                return
            self._handle(batch)

    def _handle(self, batch: list[MeshEvent]) -> None:
        on_frame, on_peer = self._on_frame, self._on_peer
        heard, now = self.identity.heard_at, time.monotonic()
        messages, frames = self.messages, False
        for event in batch:
            try:
                if type(event) is Frame:
                    peer = str(event.peer_id)
                    heard[peer] = now
                    if event.data[:1] == LINK_MESSAGE and messages.take(peer, event.data):
                        continue
                    if on_frame is not None:
                        on_frame(peer, event.data)
                        frames = True
                elif isinstance(event, PeerUp):
                    peer = str(event.peer_id)
                    heard[peer] = now
                    messages.up(peer)
                    if on_peer is not None:
                        on_peer(peer, True)
                elif isinstance(event, PeerDown) and on_peer is not None:
                    on_peer(str(event.peer_id), False)
            except Exception:
                log.exception("node %s: handling a mesh event failed", self.node_id)
        if frames and self._on_batch is not None:
            try:
                self._on_batch(True)
            except Exception:
                log.exception("node %s: handling mesh frames failed", self.node_id)
