"""What a mesh answers the links peers dial to it: refused before authentication,
admitted after it, and probes answered with how this node tries to reach the prober."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from ._admission import LogLimiter
from ._authentication import PeerVetter
from ._peer_link import PeerLink
from ._probe_notes import SHUTTING_DOWN, coming_note, dialing_note, refusal_note

__all__ = ["IncomingLinks"]

logger = logging.getLogger("lazily_transports.mesh")


class IncomingLinks:
    """The listener's checks of ``me``'s incoming links, against the mesh's ``links``
    (peer id -> link) while ``running()`` says the mesh runs. Refusals are logged at
    WARNING, at most a burst of them at once (the rest counted in the next line)."""

    def __init__(self, me: int, links: Mapping[int, PeerLink], *, vet: PeerVetter | None,
                 connect_timeout: float, running: Callable[[], bool]) -> None:
        self._me = me
        self._links = links
        self._vet = vet
        self._connect_timeout = connect_timeout
        self._running = running
        self._refusals = LogLimiter(burst=10)

    def refusal(self, peer_id: int) -> str | None:
        """Why an incoming link announcing ``peer_id`` is refused before authentication."""
        if not self._running():
            reason = SHUTTING_DOWN
        elif peer_id not in self._links:
            reason = f"peer {peer_id} is not a member of this mesh"
        else:
            return None
        self._log_refusal(reason)
        return reason

    def admit(self, peer_id: int, features: frozenset[str]) -> str | None:
        """Why the authenticated ``peer_id`` may not dial us, or None."""
        link = self._links.get(peer_id)
        if link is None:
            return f"peer {peer_id} is not a member of this mesh"
        if not link.dials:
            return self._vetted(link, features)
        reason = f"peer {peer_id} must accept links from the lower id {self._me}, not dial"
        self._log_refusal(reason)
        return reason

    def answer_probe(self, peer_id: int, features: frozenset[str]) -> str:
        """What we tell a member that probed us: how we try to reach it."""
        link = self._links.get(peer_id)
        me = self._me
        if link is None:
            return ""
        if link.up and link.dials:
            # It would not probe with our link up at its end: it restarted, or the link
            # is half-open (a WebRTC channel notices a dead peer only after seconds),
            # or it is another process than the one our link reaches, which
            # ``vet_peer`` judges from the features it announced: refused, the link
            # stays.
            refusal = self._vetted(link, features)
            if refusal is not None:
                return refusal_note(me, peer_id, refusal)
            if time.monotonic() - link.up_since < self._connect_timeout:
                return coming_note(me, peer_id, redialed=False)
            link.drop(f"peer {peer_id} probed us: it has no link from us")
            return coming_note(me, peer_id, redialed=True)
        if link.up:
            return f"node {me} has a link to node {peer_id} up"
        if not link.dials:
            return f"node {me} waits for node {peer_id} to dial"
        if link.refused is not None:
            return refusal_note(me, peer_id, link.refused)
        return dialing_note(me, peer_id, link.address, link.dial_failure,
                            time.monotonic() - link.failed_at)

    def _vetted(self, link: PeerLink, features: frozenset[str]) -> str | None:
        """``vet``'s refusal of ``link``'s peer announcing ``features`` (counted and
        logged), or None."""
        refusal = None if self._vet is None else self._vet(link.peer_id, features)
        if refusal is not None:
            link.counters.refused += 1
            self._log_refusal(refusal)
        return refusal

    def _log_refusal(self, reason: str) -> None:
        if self._refusals.allow():
            unlogged = self._refusals.take_suppressed()
            more = f" ({unlogged} more refusals were not logged)" if unlogged else ""
            logger.warning("refusing incoming link: %s%s", reason, more)
