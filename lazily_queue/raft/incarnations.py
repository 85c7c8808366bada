"""The data directory incarnations a member pins and retires for its peers.

Each data directory has a random *incarnation*, announced as the handshake feature
``incarnation:<hex>``. A node pins the incarnation it first sees for each member and
refuses a different one later: a second process started with an existing node's id
(its own data directory and address) would otherwise replace that member on the
links, with an empty log and a vote of its own. A member removed from the cluster is
unpinned, so a rebuilt node can be added back, and its incarnation is *retired*: a
link presenting it is refused for good (the removed process still running, reached at
its old address by a member whose ``[peers]`` still lists it, would otherwise answer
as the member added back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .link_identity import announced

#: The handshake feature naming a data directory's incarnation: ``incarnation:<hex>``.
INCARNATION = "incarnation:"
#: Retired incarnations kept per member id (the latest), for the 32 members removed last.
RETIRED_KEPT = 8


class Incarnations:
    """The incarnation pinned for each member and those retired, with callbacks that
    save them (in the data directory's meta)."""

    def __init__(
        self,
        pins: Mapping[str, str] | None = None,
        on_pin: Callable[[dict[str, str]], None] | None = None,
        retired: Mapping[str, list[str]] | None = None,
        on_retire: Callable[[dict[str, list[str]]], None] | None = None,
    ) -> None:
        self.pins = dict(pins or {})
        self._on_pin = on_pin
        self.retired = {peer: list(ids) for peer, ids in (retired or {}).items()}
        self._on_retire = on_retire

    def vet(self, peer: str, features: frozenset[str]) -> str | None:
        """Why a link from ``peer`` announcing ``features`` is refused (None: taken)."""
        incarnations = announced(features, INCARNATION)
        if len(incarnations) != 1:
            return (f"node {peer} announced no incarnation; every member must run a version "
                    "that does")
        if incarnations[0] in self.retired.get(peer, ()):
            return (
                f"node {peer} presented data directory incarnation {incarnations[0]}, which "
                f"belonged to a node {peer} removed from the cluster: the removed process "
                f"still runs (a member whose [peers] lists its old address reaches it), or "
                f"it was started again on its old data directory. Stop it; a member added "
                f"back starts with an empty data directory")
        pinned = self.pins.get(peer)
        if pinned is None:
            self.pins[peer] = incarnations[0]
            if self._on_pin is not None:
                self._on_pin(dict(self.pins))
            return None
        if pinned == incarnations[0]:
            return None
        return (
            f"node {peer} presented data directory incarnation {incarnations[0]}, but this "
            f"cluster knows node {peer} as incarnation {pinned}: two processes share id "
            f"{peer}, or node {peer}'s data directory was replaced. Stop the impostor; a "
            f"rebuilt node must be removed from the cluster and added back"
        )

    def retire(self, peer: str) -> None:
        """``peer`` was removed from the cluster: unpin its incarnation and retire it."""
        pinned = self.pins.pop(peer, None)
        if pinned is not None:
            if self._on_pin is not None:
                self._on_pin(dict(self.pins))
            ids = [*self.retired.pop(peer, []), pinned][-RETIRED_KEPT:]
            self.retired = dict([*self.retired.items(), (peer, ids)][-RETIRED_KEPT * 4:])
            if self._on_retire is not None:
                self._on_retire({member: list(ids) for member, ids in self.retired.items()})
