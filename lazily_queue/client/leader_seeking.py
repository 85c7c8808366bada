"""What a client does with its member's answer to its hello: the member's id, features
and request limit, and with ``prefer_leader`` a move to the leader's address (or a hello
again while the member knows no leader); how ``start`` waits for a first link its
member did not refuse over a cap; and how long it waits for one member to answer its
dial (:func:`dial_timeout`)."""

from __future__ import annotations

import asyncio

from . import protocol as P
from .link import Answer, Link
from .session import Session

#: Seconds between hellos while the linked member knows no leader (``prefer_leader``).
LEADER_RETRY = 0.5
#: The shortest wait for one member's answer to a dial when several are listed.
MIN_DIAL_TIMEOUT = 1.0


def dial_timeout(connect_timeout: float, members: int) -> float:
    """Seconds one of ``members`` listed addresses has to connect, and then to handshake:
    a share of ``connect_timeout``, so that a member that accepts and never answers
    (paused, a frozen machine) leaves time to dial the others, but at least
    :data:`MIN_DIAL_TIMEOUT` (never more than ``connect_timeout``)."""
    if members <= 1:
        return connect_timeout
    return min(connect_timeout, max(connect_timeout / members, MIN_DIAL_TIMEOUT))


class LeaderSeeking:
    """The hello answer's handling, for :class:`~.cluster.ClusterClient` (which sets up
    what is declared here)."""

    addresses: list[str]
    members: dict[str, str]
    dead_ends: set[str]
    prefer_leader: bool
    session: Session
    _link: Link | None
    _next: str | None
    _closing: bool
    _linked: asyncio.Event
    _task: asyncio.Task[None] | None

    async def _first_link(self, deadline: float) -> bool:
        """Whether a link was made that its member did not refuse over a cap. Waits until
        a member answered the hello and kept the link (not moving to the leader's), or
        a link ended unanswered (a refused hello), or :meth:`_run` ended, or
        ``deadline``."""
        loop = asyncio.get_running_loop()
        made = False
        while (task := self._task) is not None and not task.done():
            linked = asyncio.ensure_future(self._linked.wait())
            try:
                await asyncio.wait({linked, task}, timeout=max(0.0, deadline - loop.time()),
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                linked.cancel()
            link = self._link
            if link is None or not self._linked.is_set():
                return made
            settled = asyncio.ensure_future(link.settled.wait())
            try:
                await asyncio.wait({settled, task}, timeout=max(0.0, deadline - loop.time()),
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                settled.cancel()
            made = made or link.refusal is None
            if loop.time() >= deadline or (link.refusal is None and (
                    link.greeted == link.open)):
                return made  # greeted and linked, or ended unanswered (a hello refused)
            while self._link is link and not task.done():  # noqa: ASYNC110 - until unlinked
                await asyncio.sleep(0.01)
        return made

    def _drop(self, link: Link, reason: str) -> None:
        raise NotImplementedError

    def _hello(self, link: Link, answer: Answer) -> None:
        if answer is not None and answer[0] == P.OK and isinstance(answer[1], dict):
            member, leader = answer[1].get("node"), answer[1].get("leader")
            link.member = str(member) if member is not None else None
            link.leader = str(leader) if leader is not None else None
            features = answer[1].get("features")
            link.features = frozenset(f for f in features if isinstance(f, str)) if (
                isinstance(features, list)) else frozenset()
            limit = answer[1].get("max_request_bytes")
            link.max_request = limit if type(limit) is int and limit > 0 else None
            link.greeted = True
            link.settled.set()
            if link.member is not None:
                self.members[link.address] = link.member
            if self.prefer_leader and link.leader is None:
                self._ask_leader_later(link)
            elif self.prefer_leader:
                self._seek_leader(link)  # before the session registers at a follower it leaves
            if link.open:
                self.session.greeted(link)
        elif answer is not None:
            link.close(f"the member refused the session: {answer[1]}")

    def _ask_leader_later(self, link: Link) -> None:
        """The member knew no leader when linked (an election under way): say hello again
        in :data:`LEADER_RETRY` seconds, until it names one."""

        def again() -> None:
            if self._link is link and link.open and not self._closing:
                link.request([P.HELLO, P.VERSION, self.session.id],
                             lambda answer: self._hello(link, answer))

        asyncio.get_running_loop().call_later(LEADER_RETRY, again)

    def _seek_leader(self, link: Link) -> None:
        """Linked to a follower: move to the leader's address when it is known, or to an
        address not tried yet, which may be the leader's (an address that refused the
        client for good is not: the client stays; what was sent is sent again
        there, and applies once). While the session's registration asked on ``link`` is
        unanswered the client stays (its answer would be lost, and the cluster would
        hold a session no client uses): :meth:`_registered` moves on."""
        if link.leader is None or link.leader == link.member:
            return
        if self.session.registering(link):
            return
        known = [a for a, m in self.members.items() if m == link.leader]
        addresses = self.addresses  # untried ones from the next after this link's on
        start = addresses.index(link.address) + 1 if link.address in addresses else 0
        untried = [a for a in addresses[start:] + addresses[:start]
                   if a not in self.members and a not in self.dead_ends]
        if not known and not untried:
            return
        self._next = known[0] if known else untried[0]
        self._drop(link, f"moving to leader {link.leader}")

    def _registered(self, link: Link) -> None:
        """The session's registration asked on ``link`` was answered: move to the leader
        if a hello named another one meanwhile."""
        if self.prefer_leader and self._link is link and link.open and not self._closing:
            self._seek_leader(link)
