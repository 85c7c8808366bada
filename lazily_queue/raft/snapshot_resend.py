"""When a leader sends a member again the snapshot it already sent it whole.

A member asks for the same snapshot again only when it could not install it (its disk
refused the file, most often: a full or small disk). Sending it again at once, as the
consensus library does, makes a loop of whole transmissions that costs both members CPU
(the follower decodes and prepares each copy) and the link its bandwidth for as long as
the disk refuses. :class:`ResendPacer` spaces them out: the n-th resend of one snapshot
to one member waits ``base * 2 ** (n - 1)`` seconds after the previous one ended, at most
``cap``; a new snapshot (taken or installed) starts over.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Longest wait, in seconds, before a snapshot is sent whole to a member again.
RESEND_CAP = 30.0


class ResendPacer:
    """Per member: which snapshot it was last sent whole, how many times in a row, when."""

    def __init__(self, clock: Callable[[], float], base: Callable[[], float],
                 cap: float = RESEND_CAP) -> None:
        self._clock = clock
        self.base = base
        self.cap = cap
        self._sent: dict[Any, tuple[int, int, float]] = {}

    def delay(self, times: int) -> float:
        """Seconds a snapshot sent whole ``times`` times in a row waits before the next."""
        return float(min(self.cap, self.base() * 2 ** min(times - 1, 32)))

    def waits(self, member: Any, snapshot: int) -> bool:
        """Whether a transmission of ``snapshot`` (a number the store gives each snapshot
        it holds) to ``member`` must wait before it starts."""
        sent = self._sent.get(member)
        if sent is None or sent[0] != snapshot:
            return False
        _, times, ended = sent
        return self._clock() < ended + self.delay(times)

    def sent(self, member: Any, snapshot: int) -> None:
        """``snapshot`` was sent whole to ``member`` just now."""
        previous = self._sent.get(member)
        times = previous[1] + 1 if previous is not None and previous[0] == snapshot else 1
        self._sent[member] = (snapshot, times, self._clock())
