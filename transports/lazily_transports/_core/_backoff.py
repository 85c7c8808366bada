"""Reconnect delays: exponential growth, capped, with random jitter."""

from __future__ import annotations

import random
from collections.abc import Callable

__all__ = ["Backoff"]


class Backoff:
    """Delays ``initial, initial*factor, ...`` up to ``maximum``, each shortened by jitter.

    ``jitter`` is the largest fraction removed at random (0 disables it), so two nodes
    that lost each other at the same moment do not retry in lockstep.
    """

    def __init__(
        self,
        initial: float = 0.05,
        maximum: float = 2.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not 0 < initial <= maximum:
            raise ValueError(f"need 0 < initial <= maximum, got {initial} and {maximum}")
        if factor < 1:
            raise ValueError(f"factor must be at least 1, got {factor}")
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], got {jitter}")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng
        self._current = initial

    def next(self) -> float:
        """The next delay in seconds."""
        delay = self._current
        self._current = min(self.maximum, self._current * self.factor)
        return delay * (1.0 - self.jitter * self._rng())

    def reset(self) -> None:
        self._current = self.initial
