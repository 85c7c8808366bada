"""A member stopping cleanly says so on each link before closing it (:data:`GOODBYE`).

A member announcing the optional handshake feature ``link-goodbye-v1``
(:data:`~.features.GOODBYE_FEATURE`) may send :data:`GOODBYE` once it starts to stop;
its peers then report the end of its link as a stop rather than as a lost member. Only
a peer that announced the feature on its current link is sent one. A goodbye changes
no Raft state (it is neither a vote nor a step-down). One arriving from a peer that did
not announce the feature is not taken: the network hands it on as a Raft frame, which
it is not, so it is refused as a malformed frame (counted, the link closed).
"""

from __future__ import annotations

from .features import GOODBYE_FEATURE

#: Never a Raft frame (those are CBOR arrays; this is CBOR ``0`` with bytes trailing).
GOODBYE = b"\x00goodbye"


class Goodbyes:
    """Which peers may be sent a goodbye, and which said one on their current link."""

    def __init__(self) -> None:
        #: Peers whose current link announced the feature.
        self.capable: set[str] = set()
        #: Peers that said goodbye on their current link.
        self.said: set[str] = set()
        #: Goodbyes taken from peers, so far.
        self.heard = 0
        #: Whether this member said goodbye (it is stopping).
        self.sent = False

    def linked(self, peer: str, features: frozenset[str]) -> None:
        """A new link from ``peer`` announcing ``features`` is taken."""
        if GOODBYE_FEATURE in features:
            self.capable.add(peer)
        else:
            self.capable.discard(peer)

    def take(self, peer: str) -> bool:
        """A :data:`GOODBYE` frame from ``peer`` arrived: whether it is taken (the peer
        announced the feature); otherwise it is to be refused as a malformed frame."""
        if peer not in self.capable:
            return False
        self.said.add(peer)
        self.heard += 1
        return True

    def up(self, peer: str) -> None:
        """``peer``'s link is up again: what it said on an earlier one no longer holds."""
        self.said.discard(peer)

    def forget(self, peer: str) -> None:
        self.capable.discard(peer)
        self.said.discard(peer)
