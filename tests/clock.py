"""A clock a test sets by hand: a cell's ``clock=``, or the process's ``time.time`` through
the ``wall`` fixture (tests/conftest.py), which stamps replicated entries."""

from __future__ import annotations


class FakeClock:
    """Returns ``now`` (seconds) until the test moves it."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
