"""Frames on a member's links that are not Raft frames: keepalives
(:data:`~.link_identity.KEEPALIVE`), goodbyes (:mod:`.goodbye`) and transfer notices
(:mod:`.transfer_notice`).

Each starts with a zero byte (:data:`LINK_MESSAGE`; a Raft frame is a CBOR array, never
so). :class:`LinkMessages` takes them as they arrive and sends goodbyes and notices to
the peers whose current link announced their feature (a notice only when this member
announced its feature too). A frame starting with a zero byte that is none of them, or
one from a peer that did not announce its feature, is not taken: the network hands it
on as a Raft frame, and the driver refuses it as malformed (counted, the link closed).
None of them changes Raft state.
"""

from __future__ import annotations

from collections.abc import Callable

from .features import GOODBYE_FEATURE, TRANSFER_FEATURE
from .goodbye import GOODBYE, Goodbyes
from .link_identity import KEEPALIVE
from .transfer_notice import TransferNotices, notice

#: The first byte of every link message.
LINK_MESSAGE = b"\x00"

#: Queue ``frame`` to ``peer``; False when it was not (the peer is down, unknown, or its
#: buffer is full).
Send = Callable[[str, bytes], bool]


class LinkMessages:
    """One member's link messages: what its peers said, and what it says to them."""

    def __init__(self, send: Send, flush: Callable[[], None],
                 announced: frozenset[str]) -> None:
        self._send = send
        self._flush = flush
        #: The features this member announces on its links.
        self.announced = announced
        self.goodbyes = Goodbyes()
        self.transfers = TransferNotices()

    def linked(self, peer: str, features: frozenset[str]) -> None:
        """A new link from ``peer`` announcing ``features`` is taken."""
        self.goodbyes.linked(peer, features)
        self.transfers.linked(peer, features)

    def up(self, peer: str) -> None:
        """``peer``'s link is up again: a goodbye said on an earlier one no longer holds
        (a transfer notice does: it is about its term, not the link)."""
        self.goodbyes.up(peer)

    def forget(self, peer: str) -> None:
        """``peer`` is no longer a member."""
        self.goodbyes.forget(peer)
        self.transfers.forget(peer)

    def take(self, peer: str, frame: bytes) -> bool:
        """A frame starting with :data:`LINK_MESSAGE` arrived from ``peer``: whether it is
        taken; otherwise it is to be handed on (and refused) as a Raft frame."""
        if frame == KEEPALIVE:
            return True
        if frame == GOODBYE:
            return self.goodbyes.take(peer)
        return self.transfers.take(peer, frame)

    def say_goodbye(self) -> list[str]:
        """Tell every peer that announced the goodbye feature that this member is
        stopping, once; the peers told (none when it said so already, or when this member
        did not announce the feature: its peers would refuse the frame)."""
        if self.goodbyes.sent:
            return []
        self.goodbyes.sent = True
        if GOODBYE_FEATURE not in self.announced:
            return []
        return self._tell(self.goodbyes.capable, GOODBYE)

    def tell_transfer(self, term: int, target: str) -> list[str]:
        """Tell every peer that announced the transfer feature that this member, leader
        of ``term``, starts handing leadership to ``target``; the peers told (none when
        the target's id cannot be named in a notice)."""
        self.transfers.started(term, target)
        frame = notice(term, target)
        if frame is None or TRANSFER_FEATURE not in self.announced:
            return []
        return self._tell(self.transfers.capable, frame)

    def _tell(self, peers: set[str], frame: bytes) -> list[str]:
        told = [peer for peer in sorted(peers) if self._send(peer, frame)]
        self._flush()
        return told
