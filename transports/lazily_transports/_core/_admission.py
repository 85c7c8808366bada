"""Caps on a listener's unauthenticated connections, and log lines that cannot flood.

A connection is *pending* from the moment a listener accepts it until its peer is
authenticated (or it closes). ``AdmissionGate`` holds at most ``max_pending`` pending
connections in all and ``max_per_source`` from one source; a connection over either
cap is refused at once and counted in ``refused``, except that when all
``max_pending`` are taken, a connection admitted with a way to close it, from a source
holding fewer than the busiest source less one, takes the place of that source's oldest
such connection (closed, counted in ``evicted``): strangers holding every slot from a
few sources cannot keep a member's own source out. Refusals are logged at most once
per ``LOG_INTERVAL`` seconds, with the number left unlogged since the last line.
``QuietServerLog`` is the logger handed to a server library, whose lines about each
connection (opened, closed, answered) would otherwise let anyone fill the log.
``source_of`` is a connection's source (its peer's IP address). ``accept_backlog`` is
a listener's backlog: the connections asyncio also accepts in one go before any is
refused, so one burst takes no more descriptors than may be pending.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import LinkConfig

__all__ = ["LOG_INTERVAL", "AdmissionGate", "LogLimiter", "QuietServerLog", "accept_backlog",
           "source_of"]

logger = logging.getLogger("lazily_transports.listener")

#: Seconds between two log lines about refused connections.
LOG_INTERVAL = 10.0
#: asyncio's own listen backlog (and connections accepted in one go).
_ASYNCIO_BACKLOG = 100


def accept_backlog(config: LinkConfig) -> int:
    """The listen backlog of a listener of ``config`` (module docstring)."""
    return max(1, min(_ASYNCIO_BACKLOG, config.max_pending_handshakes))


def source_of(transport: asyncio.BaseTransport) -> str:
    """The admission source of a connection: its peer's IP address (``"unknown"`` when
    the transport names none, as on a Unix socket)."""
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"


class LogLimiter:
    """Lets ``burst`` lines through per ``interval`` seconds and counts the rest."""

    def __init__(
        self,
        burst: int = 1,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst = burst
        self.interval = interval
        self._clock = clock
        self._window_start = -float("inf")
        self._in_window = 0
        #: Lines withheld since the last one let through.
        self.suppressed = 0

    def allow(self) -> bool:
        """True when a line may be logged now (then report and reset ``suppressed``)."""
        now = self._clock()
        if now - self._window_start >= self.interval:
            self._window_start = now
            self._in_window = 0
        if self._in_window < self.burst:
            self._in_window += 1
            return True
        self.suppressed += 1
        return False

    def take_suppressed(self) -> int:
        count, self.suppressed = self.suppressed, 0
        return count


class QuietServerLog(logging.LoggerAdapter[logging.Logger]):
    """The logger ``name`` with its INFO lines written at DEBUG (warnings and errors
    unchanged): for a server library that logs every connection it opens or closes."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.getLogger(name), {})

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        # The library may wrap this adapter in its own: every call arrives here.
        super().log(logging.DEBUG if level == logging.INFO else level, msg, *args, **kwargs)


class AdmissionGate:
    """Counts one listener's pending (unauthenticated) connections per source."""

    def __init__(self, max_pending: int, max_per_source: int, *, label: str = "listener") -> None:
        if max_pending < 1 or max_per_source < 1:
            raise ValueError("admission caps must be positive")
        self.max_pending = max_pending
        self.max_per_source = max_per_source
        self.label = label
        #: Connections now pending.
        self.pending = 0
        #: Connections refused over a cap since the listener started.
        self.refused = 0
        #: Handshakes refused (wrong secret or cluster, unknown peer, ...) so far.
        self.refused_handshakes = 0
        #: Pending connections closed to make room for another source's.
        self.evicted = 0
        self._by_source: dict[str, int] = {}
        #: Each source's pending connections that may be closed for another's, oldest
        #: first: how to close each.
        self._closers: dict[str, dict[Hashable, Callable[[], None]]] = {}
        self._log = LogLimiter()
        self._evictions_log = LogLimiter()
        #: Connections closed to make room whose own release is yet to come (a no-op).
        self._gone: set[tuple[str, Hashable]] = set()

    def pending_from(self, source: str) -> int:
        return self._by_source.get(source, 0)

    def admit(self, source: str, key: Hashable | None = None,
              close: Callable[[], None] | None = None) -> bool:
        """Take a pending slot for ``source``; False (counted, logged) over a cap. With
        ``key`` and ``close`` (the connection and how to close it), the connection may
        take an older one's place when all slots are taken, and may later lose its own
        (module docstring); :meth:`release` is then given the same ``key``."""
        held = self._by_source.get(source, 0)
        full = self.pending >= self.max_pending
        if full and not (close is not None and self._evict(source, held)):
            why = f"{self.pending} unauthenticated connections pending (cap {self.max_pending})"
        elif held >= self.max_per_source:
            why = (
                f"{held} unauthenticated connections pending from {source} "
                f"(cap {self.max_per_source} per source)"
            )
        else:
            self._by_source[source] = held + 1
            self.pending += 1
            if key is not None and close is not None:
                self._closers.setdefault(source, {})[key] = close
            return True
        self.refused += 1
        if self._log.allow():
            logger.warning(
                "%s: closing a connection from %s at once: %s; %d refused so far",
                self.label,
                source,
                why,
                self.refused,
            )
        return False

    def release(self, source: str, key: Hashable | None = None) -> None:
        """Give back the slot ``admit`` took for ``source`` (for connection ``key``: none
        when it was closed to make room, its slot given back then)."""
        if key is not None:
            closers = self._closers.get(source)
            if closers is not None and key in closers:
                del closers[key]
                if not closers:
                    del self._closers[source]
            elif (source, key) in self._gone:  # closed to make room: released then
                self._gone.discard((source, key))
                return
        held = self._by_source.get(source, 0)
        if held <= 0:
            return
        if held == 1:
            del self._by_source[source]
        else:
            self._by_source[source] = held - 1
        self.pending -= 1

    def _evict(self, source: str, held: int) -> bool:
        """Close the oldest closable connection of the busiest source, if it holds more
        than ``source``'s ``held`` + 1; True when a slot was freed."""
        busiest = max(self._closers, key=lambda s: self._by_source.get(s, 0), default=None)
        if busiest is None or self._by_source.get(busiest, 0) - 1 <= held:
            return False
        closers = self._closers[busiest]
        key = next(iter(closers))
        close = closers[key]
        self._gone.add((busiest, key))
        self.release(busiest, key)
        self.evicted += 1
        if self._evictions_log.allow():
            logger.warning(
                "%s: every slot (%d) taken: closed the oldest connection from %s, the "
                "busiest source, for one from %s; %d closed so far", self.label,
                self.max_pending, busiest, source, self.evicted)
        close()
        return True
