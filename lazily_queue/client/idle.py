"""IdleLinks: a member closes a client link it has received nothing from, and written
nothing to, for :data:`IDLE_TIMEOUT` seconds.

A linked client pings when it has heard nothing for ``ping_interval`` (:mod:`.link`;
at most :data:`MAX_PING_INTERVAL`), so a link the member has neither received bytes
from nor written bytes to for longer is one whose client stopped, vanished without
closing it (its host gone, the network cut) or stalled mid-frame. The bytes of a frame
still arriving count while they come at :data:`MIN_RECEIVE_RATE` or faster (that many
bytes a second, over each idle timeout): a large request uploaded slowly is read to its
end, but a frame trickled slower holds its half-read bytes (up to the member's
``max_request_bytes``) only for an idle timeout, as a silent link does. Left open, a
silent link would hold its socket, its task and its watches for good, and queue every
op applied to the objects it watches (up to :data:`~.connection.MAX_OUTBOX_BYTES`). A
link the member is still writing to (a large state going out at the client's pace)
counts as alive while its bytes leave, unless a frame of the client's is half-read (its
client is not sending it: the member's writing does not hold that frame). A link the
member holds off reading (its requests wait for room, or its frame for room in the
member's frame budget, :mod:`.frame_budget`) is not silent; a frame that waits for the
budget longer than the idle timeout has its link refused (``refuse_waiting``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from ..background import Background
from ..errors import InvalidConfiguration

if TYPE_CHECKING:
    from .connection import ClientConnection

log = logging.getLogger(__name__)

#: Seconds of silence after which a member closes a client link.
IDLE_TIMEOUT = 60.0
#: The longest ``ping_interval`` a client may use (a third of :data:`IDLE_TIMEOUT`).
MAX_PING_INTERVAL = IDLE_TIMEOUT / 3
#: Bytes a second a frame still arriving must come at for its bytes to count as the
#: link's progress (:data:`IDLE_TIMEOUT` times this, 60 KiB, per idle timeout).
MIN_RECEIVE_RATE = 1024
#: Longest pause between two looks at the links.
SWEEP_EVERY = 1.0


def check_ping_interval(seconds: float) -> None:
    """Refuse a client's ``ping_interval`` (seconds above 0) longer than
    :data:`MAX_PING_INTERVAL`: its members would take its link for a dead one."""
    if seconds > MAX_PING_INTERVAL:
        raise InvalidConfiguration(
            f"ping_interval must be at most {MAX_PING_INTERVAL:.0f} s, not {seconds}: a member "
            f"closes a client link it has heard nothing from for {IDLE_TIMEOUT:.0f} s")


class IdleLinks(Background):
    """Closes the links of ``conns`` silent for :attr:`timeout` seconds, bytes arriving
    slower than :attr:`min_rate` a second counting as silence (module docstring),
    looking at them every :data:`SWEEP_EVERY` seconds once started."""

    def __init__(self, conns: Collection[ClientConnection], timeout: float = IDLE_TIMEOUT,
                 min_rate: float = MIN_RECEIVE_RATE,
                 refuse_waiting: Callable[[ClientConnection, float], None] | None = None,
                 ) -> None:
        self._conns = conns
        self._refuse_waiting = refuse_waiting
        #: Links closed because their frame waited for the frame budget, in all.
        self.budget_closed = 0
        self.timeout = timeout
        self.min_rate = min_rate
        #: Links closed for their silence, in all.
        self.closed = 0

    def start(self) -> None:
        self._start_task(self._run, "lazily-idle-clients")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(SWEEP_EVERY, self.timeout / 4))
            self.sweep(loop.time())

    def sweep(self, now: float) -> int:
        """Close the links silent at ``now`` (loop time); how many it closed."""
        closed = 0
        enough = max(1, self.min_rate * self.timeout)
        for conn in list(self._conns):
            channel = conn.outbox.stream.channel
            since = getattr(channel, "budget_waiting_since", None)
            if since is not None:  # not read by the member: its frame waits for room
                conn.heard = max(conn.heard, now)
                if now - since > self.timeout and not conn.closed:
                    self.budget_closed += 1
                    if self._refuse_waiting is not None:
                        self._refuse_waiting(conn, now - since)
                    else:
                        conn.close()
                continue
            got = channel.received_bytes
            if conn.blocked or got - conn.received >= enough:
                conn.received = got  # not read by the member, or a timeout's worth came
                conn.heard = max(conn.heard, now)
            half_read = got > conn.framed and not conn.blocked
            quiet = now - (conn.heard if half_read else max(conn.heard, conn.outbox.progress))
            if quiet > self.timeout and not conn.closed:
                log.warning("client %r: nothing received on its link (or a frame arriving "
                            "slower than %.0f bytes/s) nor written to it for %.0f s (it "
                            "stopped, stalled, or vanished without closing it); link closed",
                            conn.grant.name, self.min_rate, quiet)
                conn.close()
                closed += 1
        self.closed += closed
        return closed
