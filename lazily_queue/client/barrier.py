"""The client's barrier: :meth:`Barrier.barrier` (a mixin of
:class:`~.cluster.ClusterClient`, which sets up what it reads)."""

from __future__ import annotations

import asyncio
import math

from ..raft.errors import CommitTimeout
from ..raft.proposals import commit_deadline
from . import protocol as P
from .link import Link
from .session import Session

#: Seconds a barrier waits for its member's answer beyond the time the member was given.
BARRIER_GRACE = 1.0
#: The most milliseconds a member is given for one barrier (what it accepts).
MAX_ASK_MS = 3_600_000


class Barrier:
    """:meth:`barrier` over the client's link."""

    session: Session
    op_timeout: float
    _link: Link | None
    _linked: asyncio.Event
    _closed: asyncio.Event

    def _failure_text(self, what: str) -> str:
        raise NotImplementedError

    def _drop(self, link: Link, reason: str) -> None:
        raise NotImplementedError

    async def barrier(self, *, timeout: float | None = None) -> None:
        """Return once the member has applied (and sent this client) everything committed
        before the call: reads right after it are linearizable for the objects this client
        read before the call (one read first after it starts empty until its state
        arrives). ``timeout``: seconds (``None``: the client's ``op_timeout``); a member
        is given at most an hour of it (:data:`MAX_ASK_MS`)."""
        loop = asyncio.get_running_loop()
        given = self.op_timeout if timeout is None else timeout
        deadline = commit_deadline(loop.time(), given)
        while True:
            if not self.session.open:
                raise P.ClientClosed(f"barrier: {P.NOT_OPEN}")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise CommitTimeout("barrier did not complete before its timeout")
            linked = asyncio.ensure_future(self._linked.wait())
            closed = asyncio.ensure_future(self._closed.wait())
            try:
                await asyncio.wait({linked, closed}, timeout=remaining,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                linked.cancel()
                closed.cancel()
            if not self.session.open:
                continue  # closed meanwhile: ClientClosed above
            if not self._linked.is_set():
                raise P.Unreachable(self._failure_text("barrier: no member reachable"))
            link = self._link
            if link is None:
                continue
            ask_ms = min(MAX_ASK_MS, max(1, math.ceil(remaining * 1000)))
            try:  # the member answers within the time it is given; this bounds a member
                # that never does
                answer = await asyncio.wait_for(link.ask([P.BARRIER, ask_ms]),
                                                ask_ms / 1000 + BARRIER_GRACE)
            except TimeoutError:
                raise CommitTimeout(
                    f"barrier: member {link.member} did not answer before its timeout "
                    f"({given:g} s)") from None
            if answer is None:
                continue
            if answer[0] == P.OK:
                return
            code, message, *details = answer[1]
            if code in P.RETRYABLE:
                self._drop(link, f"{code}: {message}")
                continue
            raise P.error_of(code, message, *details)
