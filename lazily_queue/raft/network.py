"""The network seam under the driver, and an in-process implementation.

A :class:`RaftNetwork` moves whole frames between members and reports peers going up
and down, through two callbacks the driver installs. ``send`` never blocks: a frame
to a peer that is down, or whose buffer is full, is dropped and counted (Raft
retransmits). :class:`LocalHub` connects members living in one event loop, with
partitions for tests; the mesh adapter over ``lazily_transports`` lives in ``mesh.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from .features import OPTIONAL_FEATURES
from .link_messages import LINK_MESSAGE, LinkMessages

log = logging.getLogger(__name__)

FrameHandler = Callable[[str, bytes], None]
PeerHandler = Callable[[str, bool], None]
#: Called after a run of frames was handed to the frame handler: with True the driver
#: steps at once (or leaves it to a step it has pending), with False in the loop's next
#: iteration.
BatchHandler = Callable[[bool], None]


class RaftNetwork(Protocol):
    def set_handlers(
        self, on_frame: FrameHandler, on_peer: PeerHandler, on_batch: BatchHandler | None = None
    ) -> None:
        """Install the callbacks; the network calls ``on_batch`` after each run of frames
        it handed to ``on_frame`` (the frames are stepped only then)."""
        ...

    def send(self, peer_id: str, frame: bytes) -> None:
        """Queue one frame until :meth:`flush`; drop (and count) it when the peer is
        unreachable."""
        ...

    def flush(self) -> None:
        """Hand queued frames to the links now; the driver calls it after sending, before
        it yields to the loop or blocks on a disk."""
        ...

    def send_ready(self, peer_id: str) -> bool:
        """Whether a frame sent to ``peer_id`` now would be queued, not dropped."""
        ...

    def add_peer(self, peer_id: str, address: str | None) -> None: ...

    def remove_peer(self, peer_id: str) -> None: ...

    def close_peer(self, peer_id: str, reason: str) -> None:
        """Drop the current link to ``peer_id`` (a bad frame arrived on it)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class LocalHub:
    """Members of one event loop, linked directly; links can be cut for tests."""

    def __init__(self) -> None:
        self._members: dict[str, LocalNetwork] = {}
        self._cut: set[frozenset[str]] = set()
        self._one_way: set[tuple[str, str]] = set()

    def network(self, node_id: str) -> LocalNetwork:
        """The network endpoint of ``node_id`` (one per running member)."""
        return LocalNetwork(self, str(node_id))

    def linked(self, a: str, b: str) -> bool:
        return (
            a in self._members
            and b in self._members
            and frozenset((a, b)) not in self._cut
            and (a, b) not in self._one_way
        )

    def partition(self, *groups: set[str] | list[str]) -> None:
        """Cut every link between members of different groups."""
        sets = [set(map(str, g)) for g in groups]
        for i, ga in enumerate(sets):
            for gb in sets[i + 1 :]:
                for a in ga:
                    for b in gb:
                        self._cut.add(frozenset((a, b)))
        self._refresh()

    def cut_one_way(self, src: str, dst: str) -> None:
        """Frames from ``src`` to ``dst`` are lost (an asymmetric partition)."""
        self._one_way.add((str(src), str(dst)))

    def heal(self) -> None:
        self._cut.clear()
        self._one_way.clear()
        self._refresh()

    def _join(self, net: LocalNetwork) -> None:
        self._members[net.node_id] = net
        self._refresh()

    def _leave(self, net: LocalNetwork) -> None:
        if self._members.get(net.node_id) is net:
            del self._members[net.node_id]
        self._refresh()

    def _refresh(self) -> None:
        for net in list(self._members.values()):
            net._refresh()

    def _deliver(self, src: str, dst: str, frame: bytes) -> bool:
        if not self.linked(src, dst):
            return False
        target = self._members[dst]
        target._loop.call_soon(target._receive, src, frame)
        return True


class LocalNetwork:
    """One member's endpoint on a :class:`LocalHub`; its link messages
    (:mod:`.link_messages`) go to the peers whose :attr:`features` have their feature."""

    def __init__(self, hub: LocalHub, node_id: str) -> None:
        self._hub = hub
        self.node_id = node_id
        self._peers: set[str] = set()
        self._up: set[str] = set()
        self._on_frame: FrameHandler | None = None
        self._on_peer: PeerHandler | None = None
        self._on_batch: BatchHandler | None = None
        self._loop: asyncio.AbstractEventLoop
        self._running = False
        self.sent = 0
        self.dropped = 0
        self.messages = LinkMessages(self._send_message, lambda: None, OPTIONAL_FEATURES)
        self.goodbyes, self.transfers = self.messages.goodbyes, self.messages.transfers

    @property
    def features(self) -> frozenset[str]:
        """The optional features this member announces to its peers (as a link's
        handshake would; a test may announce fewer, as an older version would)."""
        return self.messages.announced

    @features.setter
    def features(self, features: frozenset[str]) -> None:
        self.messages.announced = features

    def set_handlers(
        self, on_frame: FrameHandler, on_peer: PeerHandler, on_batch: BatchHandler | None = None
    ) -> None:
        self._on_frame, self._on_peer, self._on_batch = on_frame, on_peer, on_batch

    def send(self, peer_id: str, frame: bytes) -> None:
        delivered = self._running and peer_id in self._up
        if delivered and self._hub._deliver(self.node_id, peer_id, frame):
            self.sent += 1
        else:
            self.dropped += 1

    def flush(self) -> None:
        """Frames are handed over as they are sent."""

    def send_ready(self, peer_id: str) -> bool:
        return self._running and peer_id in self._up and self._hub.linked(self.node_id, peer_id)

    def add_peer(self, peer_id: str, address: str | None) -> None:
        if peer_id != self.node_id:
            self._peers.add(peer_id)
            self._refresh()

    def remove_peer(self, peer_id: str) -> None:
        self._peers.discard(peer_id)
        self.messages.forget(peer_id)
        self._refresh()

    def close_peer(self, peer_id: str, reason: str) -> None:
        log.warning("node %s: dropping link to %s: %s", self.node_id, peer_id, reason)

    def say_goodbye(self) -> list[str]:
        """Tell every linked peer that this member is stopping (:mod:`.goodbye`), after
        the frames sent before, once; returns the peers told (none when it said so
        already)."""
        return self.messages.say_goodbye()

    def tell_transfer(self, term: int, target: str) -> list[str]:
        """Tell every linked peer that this member, leader of ``term``, starts handing
        leadership to ``target`` (:mod:`.transfer_notice`); returns the peers told."""
        return self.messages.tell_transfer(term, target)

    def _send_message(self, peer: str, frame: bytes) -> bool:
        return (self._running and peer in self._up
                and self._hub._deliver(self.node_id, peer, frame))

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._running = True
        self._hub._join(self)

    async def stop(self) -> None:
        self._running = False
        self._hub._leave(self)
        for peer in list(self._up):
            self._set(peer, False)

    def _receive(self, src: str, frame: bytes) -> None:
        if not self._running or src not in self._up:
            return
        if frame[:1] == LINK_MESSAGE and self.messages.take(src, frame):
            return
        if self._on_frame is not None:
            self._on_frame(src, frame)
            if self._on_batch is not None:
                self._on_batch(False)  # the frames of one iteration step together

    def _refresh(self) -> None:
        if not self._running:
            return
        for peer in self._peers:
            # A link is up only when both directions work, like a real connection.
            up = self._hub.linked(self.node_id, peer) or self._hub.linked(peer, self.node_id)
            self._set(peer, up)
        for peer in list(self._up - self._peers):
            self._set(peer, False)

    def _set(self, peer: str, up: bool) -> None:
        if up == (peer in self._up):
            return
        if up:
            self._up.add(peer)
            self.messages.linked(peer, self._hub._members[peer].features)
            self.messages.up(peer)
        else:
            self._up.discard(peer)
        if self._on_peer is not None:
            self._loop.call_soon(self._on_peer, peer, up)
