"""The bytes of request frames each client's links hold decoded at once.

A link holds its frame, decoded, until every request in it is served, and waiting for
room (request slots, or a state it reads going out at its client's pace) can take long:
a client that does not read a large state keeps its link waiting for good. The values of
a frame can take 30 times its bytes (77 for a small one of empty maps), so 63 links of one
client, each waiting with a megabyte frame of decimals and empty arrays, held a member at
2.4 GB. A link counts its frame's bytes from before it is decoded until it is served;
each client's links hold at most ``limit`` bytes of frames at once
(:data:`IN_HAND_FRAMES` of the member's request limit), a frame that would pass it waiting
undecoded, in the order they came, until its client's earlier frames are served (one frame
is always taken when the client holds none). The links of one client name share the
bound, whichever processes hold them. A link whose frame waits here is not read
further and counts as busy, not silent (:mod:`.idle`); one that ends while its frame waits
lets it go at once. A frame starting to wait is logged, one line per 10 s at most.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from lazily_transports import LogLimiter

if TYPE_CHECKING:
    from .connection import ClientConnection

log = logging.getLogger(__name__)

#: Request limits' worth of frames one client's links hold at once.
IN_HAND_FRAMES = 2


class FramesInHand:
    """Bytes of frames held by each client's links, at most ``limit`` (module docstring)."""

    __slots__ = ("_log", "_waiting", "held", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Bytes of frames held, by client name (absent: none).
        self.held: dict[str, int] = {}
        #: Frames waiting for room, by client name, the first first.
        self._waiting: dict[str, deque[tuple[int, asyncio.Future[None]]]] = {}
        self._log = LogLimiter()

    @property
    def waiting(self) -> int:
        """Frames waiting for room, of all clients."""
        return sum(1 for frames in self._waiting.values()
                   for _, fut in frames if not fut.done())

    def _fits(self, client: str, size: int) -> bool:
        held = self.held.get(client, 0)
        return not held or held + size <= self.limit

    async def take(self, conn: ClientConnection, size: int,
                   ended: Callable[[], Awaitable[None]]) -> bool:
        """Count a frame of ``size`` bytes of ``conn``'s client, waiting for room first;
        False (nothing counted) when ``ended`` (the link's end) returned first."""
        client = conn.grant.name
        if client not in self._waiting and self._fits(client, size):
            self.held[client] = self.held.get(client, 0) + size
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append((size, fut))
        if self._log.allow():
            unlogged = self._log.take_suppressed()
            log.warning("client %r: its links hold %d bytes of request frames not yet served "
                        "(at most %d: they wait for request slots, or for states they read to "
                        "leave at the client's pace), so a frame of %d bytes waits undecoded, "
                        "its link not read further%s", client, self.held.get(client, 0),
                        self.limit, size, f" ({unlogged} more frames waited since the last "
                        "line)" if unlogged else "")
        ending = asyncio.ensure_future(ended())
        conn.blocked = True
        try:
            await asyncio.wait((fut, ending), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            self._let_go(client, size, fut)
            raise
        finally:
            conn.blocked = False
            ending.cancel()
        if fut.done():
            return True
        self._let_go(client, size, fut)
        return False

    def _let_go(self, client: str, size: int, fut: asyncio.Future[None]) -> None:
        """A frame of ``size`` bytes stops waiting: its bytes back if they were counted."""
        if fut.done() and not fut.cancelled():
            self.give(client, size)
        else:
            fut.cancel()
            self._admit(client)

    def give(self, client: str, size: int) -> None:
        """``client``'s frame of ``size`` bytes is served: its room to the frames waiting."""
        if not size:
            return
        held = self.held[client] - size
        if held:
            self.held[client] = held
        else:
            del self.held[client]
        self._admit(client)

    def _admit(self, client: str) -> None:
        frames = self._waiting.get(client)
        while frames:
            size, fut = frames[0]
            if fut.done():
                frames.popleft()
            elif self._fits(client, size):
                frames.popleft()
                self.held[client] = self.held.get(client, 0) + size
                fut.set_result(None)
            else:
                return
        self._waiting.pop(client, None)
