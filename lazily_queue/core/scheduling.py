"""Scheduling arguments: priority levels, delays, ``not_before`` times and retry policies.

Every check raises :class:`~lazily_queue.errors.InvalidSchedule` naming the argument, so
a bad argument is refused before anything is proposed.

- A priority is an int from :data:`MIN_PRIORITY` (0, the default) to
  :data:`MAX_PRIORITY` (9); higher levels are claimed first, FIFO within a level.
- A delay is a finite number of seconds >= 0.
- ``not_before`` is a timezone-aware :class:`datetime.datetime`, compared with the
  leader's (or the local cell's) clock as seconds since the Unix epoch.
- A :class:`RetryPolicy` gives the back-off of a retried item from the attempt that
  failed: ``base * factor ** (attempt - 1)`` seconds, at most ``cap``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ..errors import InvalidSchedule, shown
from .numbers import AS_LONG_AS_ANY, is_finite

MIN_PRIORITY: Final = 0
MAX_PRIORITY: Final = 9
DEFAULT_PRIORITY: Final = 0


def check_priority(priority: object) -> int:
    """``priority`` as a level 0..9."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InvalidSchedule(f"priority must be an int from {MIN_PRIORITY} to "
                              f"{MAX_PRIORITY}, got {shown(priority)}")
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise InvalidSchedule(f"priority must be from {MIN_PRIORITY} to {MAX_PRIORITY} "
                              f"(higher first), got {priority}")
    return priority


def check_delay(delay: object, what: str = "delay") -> float:
    """``delay`` as seconds >= 0."""
    if isinstance(delay, bool) or not isinstance(delay, int | float):
        raise InvalidSchedule(f"{what} must be a number of seconds >= 0, got {shown(delay)}")
    if not is_finite(delay) or delay < 0:
        raise InvalidSchedule(f"{what} must be a finite number of seconds >= 0, got {shown(delay)}")
    return float(min(delay, AS_LONG_AS_ANY))  # as long as any (capped where it is used)


def check_not_before(not_before: object) -> float:
    """``not_before`` (an aware datetime) as seconds since the Unix epoch."""
    if not isinstance(not_before, datetime):
        raise InvalidSchedule("not_before must be a timezone-aware datetime, got "
                              f"{type(not_before).__name__}")
    if not_before.tzinfo is None or not_before.utcoffset() is None:
        raise InvalidSchedule(f"not_before must be timezone-aware (give tzinfo, e.g. "
                              f"datetime.now(timezone.utc)), got the naive {shown(not_before)}")
    return not_before.timestamp()


def check_when(delay: object, not_before: object) -> tuple[float | None, float | None]:
    """``(delay_s, not_before_epoch_s)`` of a push: at most one of them is given."""
    if delay is not None and not_before is not None:
        raise InvalidSchedule("give delay= or not_before=, not both")
    return (None if delay is None else check_delay(delay),
            None if not_before is None else check_not_before(not_before))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """The back-off before a failed item is claimable again, in seconds.

    ``RetryPolicy.fixed(5)`` waits 5 s after every failure;
    ``RetryPolicy.exponential(base=1, factor=2, cap=60)`` waits 1, 2, 4, ... s, at most
    60. It applies when a job is nacked without an explicit delay and when its lease
    expires; ``max_deliveries`` still sends the last failure to the dead letters.
    """

    base: float
    factor: float = 1.0
    cap: float | None = None

    def __post_init__(self) -> None:
        check_delay(self.base, "retry base")
        f = self.factor
        if isinstance(f, bool) or not isinstance(f, int | float) or not is_finite(f) or f < 1:
            raise InvalidSchedule(f"retry factor must be a finite number >= 1, got {shown(f)}")
        if self.cap is not None:
            check_delay(self.cap, "retry cap")
            if self.cap < self.base:
                raise InvalidSchedule(
                    f"retry cap must be at least retry base (every wait would be the cap, "
                    f"never the base), got base {shown(self.base)} and cap {shown(self.cap)}: "
                    f"give cap >= {shown(self.base)} (RetryPolicy.exponential caps at 60 "
                    "unless given cap=), or cap=None for no maximum")

    @classmethod
    def fixed(cls, delay: float) -> RetryPolicy:
        return cls(delay)

    @classmethod
    def exponential(cls, base: float = 1.0, factor: float = 2.0,
                    cap: float | None = 60.0) -> RetryPolicy:
        return cls(base, factor, cap)

    def delay(self, attempt: int) -> float:
        """The back-off after failed delivery ``attempt`` (1-based)."""
        exponent = max(0, attempt - 1)
        if self.factor == 1:
            wait = self.base
        else:  # stop growing once past the cap (no overflow on long histories)
            limit = self.cap if self.cap is not None else math.inf
            wait = self.base
            for _ in range(exponent):
                if wait >= limit:
                    break
                wait *= self.factor
        return wait if self.cap is None else min(wait, self.cap)

    def scaled(self, unit: float) -> RetryPolicy:
        """The same policy counted in ``unit`` per second (1000: milliseconds)."""
        return RetryPolicy.from_list([self.base * unit, self.factor,
                                      None if self.cap is None else self.cap * unit])

    def to_list(self) -> list[Any]:
        return [self.base, self.factor, self.cap]

    @classmethod
    def from_list(cls, raw: Any) -> RetryPolicy:
        """:meth:`to_list` output; ``InvalidSchedule`` when malformed. A cap below the
        base is taken as it was stored (earlier versions accepted one, and replicas apply
        the same ops alike)."""
        if not isinstance(raw, list | tuple) or len(raw) != 3:
            raise InvalidSchedule(f"a retry policy is [base, factor, cap], got {shown(raw)}")
        policy = cls(raw[0], raw[1])
        if raw[2] is not None:
            check_delay(raw[2], "retry cap")
            object.__setattr__(policy, "cap", raw[2])
        return policy
