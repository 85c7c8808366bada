"""Virtual time for the simulator: one shared monotonic clock, one wall clock per node.

Nothing here reads the real clock. The monotonic clock only moves when the simulator
advances it; a node's wall clock is that time plus an epoch and a per-node offset,
which a fault can jump forwards or backwards (the leader stamps batches with it).
"""

from __future__ import annotations

EPOCH = 1_700_000_000.0


class VirtualClock:
    """The simulation's monotonic time in seconds, moved only by :meth:`advance_to`."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance_to(self, when: float) -> None:
        if when < self.now:
            raise ValueError(f"time cannot go back from {self.now} to {when}")
        self.now = when


class WallClock:
    """A node's wall clock: virtual time + epoch + an offset that faults can jump."""

    def __init__(self, clock: VirtualClock, offset: float = 0.0) -> None:
        self._clock = clock
        self.offset = offset

    def __call__(self) -> float:
        return EPOCH + self._clock.now + self.offset

    def jump(self, seconds: float) -> None:
        """Move this wall clock by ``seconds`` (negative: backwards)."""
        self.offset += seconds
