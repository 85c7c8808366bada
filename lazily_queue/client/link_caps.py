"""Caps on the client links a member holds open (each costs it a file descriptor, a task,
buffers and up to one half-read frame).

A client may hold at most its grant's ``max_links`` links to one member at once
(:data:`DEFAULT_MAX_LINKS_PER_CLIENT`), and a member at most ``max_links`` client links
in all (:class:`~.access.ClientAccess`, :data:`DEFAULT_MAX_CLIENT_LINKS`), lowered to
fit the process's open-file limit (``ulimit -n``) less :func:`fd_reserve` descriptors
kept for Raft, the journal, HTTP, handshakes under way and refused links closing. A
member serving more than one client name keeps the rest for the others: one name holds
at most a quarter of its client links (:func:`client_share`), whatever its grant allows,
so a grant with a raised ``max_links``, or the default one at a low ``ulimit -n``,
cannot take them all. A link over a cap is refused once authenticated: its first frame
is ``[0, ERROR, ["too_many_links", message]]`` (the client raises
:class:`~.protocol.TooManyLinks`), then it is closed. A link counts from the moment it
is served until it closes: a closed one frees its place at once, so a client that links
again after losing a link is not refused for it.
"""

from __future__ import annotations

import logging
import resource
from collections import Counter

import anyio
from lazily_transports import LinkStream, LogLimiter

from . import protocol as P

log = logging.getLogger(__name__)

#: Links one client may hold open to one member, unless its grant says otherwise.
DEFAULT_MAX_LINKS_PER_CLIENT = 64
#: Client links one member holds open in all, unless its access says otherwise.
DEFAULT_MAX_CLIENT_LINKS = 4096
#: The wire code of a link refused by a cap.
TOO_MANY_LINKS = "too_many_links"
#: Refused links held open at once for their clients to read the refusal.
HELD_REFUSED = 16
#: Seconds a refused link is held for its client to read the refusal and close it.
_REFUSAL_SECONDS = 1.0
#: A client name holds at most this fraction (1 / it) of a member's client links and of
#: its frame budget, when the member serves other names too.
CLIENT_SHARE = 4


def client_share(total: int, clients: int) -> int | None:
    """What one client name may hold of ``total`` (links, or bytes of the frame budget)
    on a member serving ``clients`` names: a quarter of it, at least 1 (``None``: the
    only client, no share)."""
    return None if clients <= 1 else max(1, total // CLIENT_SHARE)


def fd_reserve(soft: int) -> int:
    """File descriptors kept for what is not a client link under an open-file limit of
    ``soft``: a quarter of it, at least 64."""
    return max(64, soft // 4)


def fd_room() -> tuple[int, int] | None:
    """The client links the open-file limit leaves room for, and that limit (``None``:
    no limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(1, soft - fd_reserve(soft)), soft


class LinkCaps:
    """The links open per client name and in all, against the caps (module docstring)."""

    def __init__(self, member: str, max_links: int,
                 room: tuple[int, int] | None = None, clients: int = 1) -> None:
        self.member = member
        self.configured = max_links
        self._soft = None if room is None else room[1]
        #: The cap in all: ``max_links``, or less when the open-file limit is lower.
        self.max_links = max_links if room is None else min(max_links, room[0])
        #: The links one client name holds at most (``None``: the only name, no share).
        self.share = client_share(self.max_links, clients)
        self.open: Counter[str] = Counter()
        self.total = 0
        #: Links refused by a cap, in all.
        self.refused = 0
        #: Refused links waiting for their client to close them (:meth:`refuse`).
        self.holding = 0
        self._log = LogLimiter()

    def admit(self, name: str, cap: int) -> str | None:
        """Count a new link of client ``name`` (whose cap is ``cap``); why it is refused
        instead (not counted), ``None`` when admitted."""
        held = self.open[name]
        if held >= cap:
            refusal = (
                f"client {name!r} already holds {held} links to member {self.member}, its "
                f"cap (max_links = {cap} in its [[client]] table, ClientGrant(max_links=)): "
                "close the links it no longer uses (share one client among the tasks of a "
                "process) or raise its max_links")
        elif self.total >= self.max_links:
            lowered = ("" if self.max_links == self.configured else
                       f", lowered from {self.configured} to fit the open-file limit "
                       f"(ulimit -n {self._soft}) less {fd_reserve(self._soft or 0)} kept "
                       "for Raft, files and handshakes")
            refusal = (
                f"member {self.member} already holds {self.total} client links, its cap "
                f"(max_client_links = {self.max_links} in its configuration, "
                f"ClientAccess(max_links=){lowered}): link to another member, close unused "
                "links, or raise max_client_links (and ulimit -n)")
        elif self.share is not None and held >= self.share:
            refusal = (
                f"client {name!r} already holds {held} links to member {self.member}, its "
                f"share of the member's client links (a quarter of its cap of "
                f"{self.max_links}, kept so other clients can link too): close the links it "
                "no longer uses, link to another member, or raise max_client_links in the "
                "member's configuration (ClientAccess(max_links=), and ulimit -n)")
        else:
            self.open[name] = held + 1
            self.total += 1
            return None
        self.refused += 1
        if self._log.allow():
            unlogged = self._log.take_suppressed()
            log.warning("client link refused: %s%s", refusal,
                        f" ({unlogged} more refused since the last line)" if unlogged else "")
        return refusal

    async def refuse(self, stream: LinkStream, refusal: str) -> None:
        """Send ``refusal`` as the link's first frame, then close the link once its client
        closed it, or after :data:`_REFUSAL_SECONDS` (what the client sent meanwhile, its
        hello, is read and dropped: a socket closed with unread bytes resets the
        connection, and the client could lose the refusal). At most :data:`HELD_REFUSED`
        refused links wait so; the others are closed at once."""
        hold = self.holding < HELD_REFUSED
        self.holding += hold
        try:
            with anyio.move_on_after(_REFUSAL_SECONDS):
                await stream.send(P.encode([0, P.ERROR, [TOO_MANY_LINKS, refusal]]))
                while hold:
                    await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                OSError):
            pass
        finally:
            self.holding -= hold
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    def release(self, name: str) -> None:
        """A link of client ``name`` admitted by :meth:`admit` closed."""
        self.total -= 1
        if self.open[name] <= 1:
            del self.open[name]
        else:
            self.open[name] -= 1
