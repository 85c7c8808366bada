"""A leader starting a leadership transfer says so on its links (:func:`notice`).

A member announcing the optional handshake feature ``link-transfer-v1``
(:data:`~.features.TRANSFER_FEATURE`) may be sent a notice naming the leader's term and
the transfer's target when the leader starts a transfer; it keeps the latest notice of
each peer, so that the leader it loses next can be told apart from a failed one (the
state log then says who takes over, at INFO). A notice changes no Raft state: it is
neither a vote nor a step-down, and is kept only for a few election timeouts
(:data:`KEPT_ELECTIONS`). One from a peer that did not announce the feature, or one
that is malformed, is not taken: the network hands it on as a Raft frame, which it is
not, so it is refused as a malformed frame (counted, the link closed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .features import TRANSFER_FEATURE

#: Never a Raft frame (those are CBOR arrays; this is CBOR ``0`` with bytes trailing),
#: followed by ``<term>:<target id>``.
TRANSFER = b"\x00transfer:"
#: Longest target id a notice names (in characters).
MAX_TARGET = 64
#: Longest notice taken: the prefix, a term of at most 20 digits, a colon and the id.
MAX_NOTICE = len(TRANSFER) + 20 + 1 + 4 * MAX_TARGET
#: Election timeouts (the longest) a notice is taken to explain a lost leader.
KEPT_ELECTIONS = 5


def notice(term: int, target: str) -> bytes | None:
    """The notice that the leader of ``term`` hands leadership to ``target`` (None when
    ``target`` cannot be named in one: more than :data:`MAX_TARGET` characters, or not
    printable)."""
    frame = TRANSFER + f"{term}:{target}".encode()
    return frame if read_notice(frame) == (term, target) else None


def read_notice(frame: bytes) -> tuple[int, str] | None:
    """The term and target a notice names; None when ``frame`` is no well-formed one."""
    if not frame.startswith(TRANSFER) or len(frame) > MAX_NOTICE:
        return None
    try:
        text = frame[len(TRANSFER):].decode()
    except UnicodeDecodeError:
        return None
    term, colon, target = text.partition(":")
    if (not colon or not term.isascii() or not term.isdigit() or len(term) > 20
            or not 0 < len(target) <= MAX_TARGET or not target.isprintable()):
        return None
    return int(term), target


@dataclass(frozen=True)
class Notice:
    """The leader of ``term`` hands leadership to ``target`` (said at ``at``, monotonic)."""

    term: int
    target: str
    at: float

    def explains(self, term: int, within: float, now: float) -> bool:
        """Whether it explains a leader of ``term`` lost at ``now``, ``within`` seconds
        at most after it was said."""
        return self.term == term and 0 <= now - self.at <= within


class TransferNotices:
    """Which peers may be sent a notice, the latest each sent, and this member's own."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        #: Peers whose current link announced the feature.
        self.capable: set[str] = set()
        #: The latest notice taken from each peer.
        self.heard: dict[str, Notice] = {}
        #: Notices taken from peers, so far.
        self.taken = 0
        #: The latest transfer this member started as leader.
        self.handing: Notice | None = None

    def linked(self, peer: str, features: frozenset[str]) -> None:
        """A new link from ``peer`` announcing ``features`` is taken."""
        if TRANSFER_FEATURE in features:
            self.capable.add(peer)
        else:
            self.capable.discard(peer)

    def take(self, peer: str, frame: bytes) -> bool:
        """A frame starting like a notice arrived from ``peer``: whether it is taken (the
        peer announced the feature and the notice is well formed); otherwise it is to be
        refused as a malformed frame."""
        said = read_notice(frame) if peer in self.capable else None
        if said is None:
            return False
        self.heard[peer] = Notice(*said, self.clock())
        self.taken += 1
        return True

    def started(self, term: int, target: str) -> None:
        """This member, leader of ``term``, starts handing leadership to ``target``."""
        self.handing = Notice(term, target, self.clock())

    def forget(self, peer: str) -> None:
        self.capable.discard(peer)
        self.heard.pop(peer, None)
