"""A digest of one kind of refused handshake that arrives in floods (slow-loris
connections that never finish theirs): the first few are logged one by one, the rest
as one line per interval with their count and the latest peer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ._admission import LOG_INTERVAL

__all__ = ["RefusalDigest"]


class RefusalDigest:
    """Logs the first ``first`` refusals to ``logger`` one by one, then one line per
    ``interval`` counting those since; after an interval without any, the next ones
    are logged one by one again."""

    def __init__(
        self,
        logger: logging.Logger,
        first: int = 3,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self.first = first
        self.interval = interval
        self._clock = clock
        self._shown = 0  # logged one by one since the last quiet interval
        self._last = -float("inf")
        self.pending = 0  # counted for the next summary line
        self._sample: tuple[str, object] = ("", "")
        self._timer: asyncio.TimerHandle | None = None

    def add(self, peer: str, error: object) -> None:
        """One refusal of the handshake with ``peer`` for ``error``."""
        now = self._clock()
        if now - self._last >= self.interval and not self.pending:
            self._shown = 0
        self._last = now
        if self._shown < self.first:
            self._shown += 1
            self._logger.warning("handshake with %s refused: %s", peer, error)
            return
        self.pending += 1
        self._sample = (peer, error)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval, self.flush)

    def flush(self) -> None:
        """Log the refusals counted since the last line (none: nothing)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.pending:
            return
        count, self.pending = self.pending, 0
        peer, error = self._sample
        self._logger.warning(
            "%d more handshakes refused (one line per %g s), the latest with %s: %s",
            count, self.interval, peer, error)
