"""ProposalWindow: how many of its clients' ops a member proposes and leaves unanswered
at once, kept short enough that the log does not queue them for long.

Every queue shares the one Raft log, so an op proposed behind a window of others
commits after them: a light client's one op waits for the flood's whole window. While
clients have more ops than the window holds (some wait in their lanes) and the ops
answered in the last :data:`INTERVAL` took longer than the target on average, the
window shrinks by a fifth, down to ``floor``; otherwise it grows back by a sixteenth an
interval, up to ``ceiling``. So under a flood the log holds about what commits within
the target, at the cost of the flood's throughput (fewer ops share each entry). The
target is ``target`` seconds, or :data:`FSYNC_FACTOR` times this member's last fsync
when that is longer (on a slow disk a short window would cost most of the
throughput); ``target`` 0 keeps the window at ``ceiling``. Each member controls its own
window; all of them see the latency the log's length gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import InvalidConfiguration, shown

#: Seconds between two changes of the window.
INTERVAL = 0.1
#: Default target (seconds) of an interval's mean commit latency.
DEFAULT_COMMIT_TARGET = 0.01
#: The target is at least this many times the member's last fsync.
FSYNC_FACTOR = 10.0
#: What the window keeps of itself when it shrinks, and adds when it grows.
SHRINK = 0.8
GROW = 1 / 16


def check_commit_target(value: Any, what: str) -> float:
    """``value`` as the setting ``what``: seconds, 0 or more (0: no target), else raise
    ``InvalidConfiguration``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= 0):
        raise InvalidConfiguration(
            f"{what} must be a number of seconds, 0 or more (0: no target), not "
            f"{shown(value)}")
    return float(value)


class ProposalWindow:
    """A window of ops between ``floor`` and ``ceiling`` (module docstring);
    ``fsync()`` says how long this member's last fsync took (seconds)."""

    __slots__ = ("_count", "_fsync", "_pressed", "_total", "_until", "ceiling", "floor",
                 "interval", "size", "target")

    def __init__(self, ceiling: int, floor: int, target: float = DEFAULT_COMMIT_TARGET,
                 fsync: Callable[[], float] = lambda: 0.0, *,
                 interval: float = INTERVAL) -> None:
        if ceiling < 1:
            raise ValueError(f"the proposal window must be at least 1 op, not {ceiling}")
        self.ceiling = ceiling
        self.floor = max(1, min(floor, ceiling))
        self.target = check_commit_target(target, "the commit target")
        self.interval = interval
        #: Most ops proposed and unanswered at once now.
        self.size = ceiling
        self._fsync = fsync
        self._total = 0.0
        self._count = 0
        self._pressed = False
        self._until = 0.0

    def pressed(self) -> None:
        """Some client's op waits for room in the window."""
        self._pressed = True

    def committed(self, latency: float, now: float) -> None:
        """An op (or a batch of them) proposed ``latency`` seconds before ``now`` was
        answered."""
        self._total += latency
        self._count += 1
        if now >= self._until:
            self._turn(now)

    def current_target(self) -> float:
        """The mean commit latency the window is kept under (seconds; 0: none)."""
        if not self.target:
            return 0.0
        return max(self.target, FSYNC_FACTOR * self._fsync())

    def _turn(self, now: float) -> None:
        target = self.current_target()
        if target and self._pressed and self._total > target * self._count:
            self.size = max(self.floor, int(self.size * SHRINK))
        elif self.size < self.ceiling:
            self.size = min(self.ceiling, self.size + max(1, int(self.size * GROW)))
        self._total = 0.0
        self._count = 0
        self._pressed = False
        self._until = now + self.interval
