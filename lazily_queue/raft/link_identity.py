"""Which process speaks for each member: one live link per member id.

Every process announces a random *process id* (handshake feature ``process:<hex>``,
new on each start) and ``link-keepalive-v1``: it then sends :data:`KEEPALIVE` on every
link at least every ``window / 4`` seconds, so a link that carries no Raft traffic (two
followers) still shows its peer is alive, and drops keepalives it receives.

A member whose link from peer X is *live* (still up, and something arrived on it within
``window`` seconds, about an election timeout) refuses a second link claiming to be X
from another process: two processes with one id (a copied data directory, or one id
configured twice) would otherwise take the links from each other in turn, and the
cluster would count two voters as one. The first keeps its link. A restarted X is taken
at once when its old link closed (a clean stop, a killed process) and within ``window``
when the old link went silent (a host that rebooted).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

PROCESS = "process:"
KEEPALIVE_FEATURE = "link-keepalive-v1"
#: Never a Raft frame (those are CBOR arrays): dropped by the receiving network.
KEEPALIVE = b"\x00"
#: Seconds between two log lines about the same member's duplicate.
LOG_EVERY = 10.0
#: The liveness window in election timeouts (the longest one): a link silent this long is
#: no longer live, and another process may take the member's place.
LIVE_ELECTIONS = 2
#: How a refusal of a second process of a live member begins.
DUPLICATE = "another process already runs as node"


def announced(features: frozenset[str], prefix: str) -> list[str]:
    """The values of the features starting with ``prefix``, sorted."""
    return sorted(f[len(prefix):] for f in features if f.startswith(prefix))


class LinkIdentity:
    """Tracks the process behind each member's current link and when it was last heard."""

    def __init__(
        self,
        node_id: str,
        window: float,
        is_up: Callable[[str], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not window > 0:
            raise ValueError("the liveness window must be a number of seconds > 0")
        self.node_id = node_id
        self.window = window
        self.process = secrets.token_hex(8)
        self.features = frozenset({PROCESS + self.process, KEEPALIVE_FEATURE})
        self._is_up = is_up
        self._clock = clock
        self._process: dict[str, str] = {}
        #: When something last arrived from each peer (the network writes it per frame).
        self.heard_at: dict[str, float] = {}
        self._logged: dict[str, float] = {}
        #: Peers that asked for keepalives (announced the feature on their current link).
        self.keepalive: set[str] = set()
        #: Links refused as a second process of a member, so far.
        self.refused = 0

    def live(self, peer: str) -> bool:
        """Whether ``peer``'s link is up and carried something within the window."""
        heard = self.heard_at.get(peer)
        return (heard is not None and self._clock() - heard <= self.window
                and self._is_up(peer))

    def vet(self, peer: str, features: frozenset[str]) -> str | None:
        """Why a new authenticated link from ``peer`` is refused, or None (it is taken)."""
        ids = announced(features, PROCESS)
        process = ids[0] if len(ids) == 1 else None
        current = self._process.get(peer)
        if process is not None and current is not None and process != current \
                and self.live(peer):
            self.refused += 1
            now = self._clock()
            if now - self._logged.get(peer, float("-inf")) >= LOG_EVERY:
                self._logged[peer] = now
                log.warning(
                    "node %s: refusing a second process claiming to be node %s (process %s) "
                    "while node %s's link (process %s) is live: a copy of node %s's data "
                    "directory runs elsewhere, or id %s is configured on two nodes",
                    self.node_id, peer, process, peer, current, peer, peer)
            return (f"{DUPLICATE} {peer} and its link to node "
                    f"{self.node_id} is live: two processes share id {peer} (a copied data "
                    f"directory, or id {peer} configured twice). Stop this one")
        self._process[peer] = process or ""
        self.heard_at[peer] = self._clock()
        if KEEPALIVE_FEATURE in features:
            self.keepalive.add(peer)
        else:
            self.keepalive.discard(peer)
        return None

    def forget(self, peer: str) -> None:
        """``peer`` left the cluster: whoever is added back under its id is a new member."""
        self._process.pop(peer, None)
        self.heard_at.pop(peer, None)
        self.keepalive.discard(peer)
