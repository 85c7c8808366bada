"""Generated runs of elements with expiry, shared by the tests that compare a run leaving
at once with its elements leaving one by one."""

from __future__ import annotations

import random
from collections.abc import Iterator


def stamped_runs(rng: random.Random) -> Iterator[tuple[int, list[int | None]]]:
    """One to six runs pushed at stamps 1_000 and on (some sharing a stamp): each run's
    stamp and its elements' own ttls (ms; ``None``: the default applies), all alike or
    mixed."""
    stamp = 1_000
    for _ in range(rng.randint(1, 6)):
        stamp += rng.choice([0, 100, 400])
        own = rng.choice([None, 300, 600, "mixed"])
        yield stamp, [rng.choice([None, 200, 900]) if own == "mixed" else own  # type: ignore[misc]
                      for _ in range(rng.randint(1, 40))]


def expiry_time(rng: random.Random, last_stamp: int) -> int:
    """A time to expire at, from before the last run's ttls end to long after."""
    return last_stamp + rng.choice([0, 300, 700, 1_600, 5_000])
