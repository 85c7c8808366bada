"""Checks of the numbers callers pass: times, durations and waits."""

from __future__ import annotations

import math

from ..errors import shown

#: The largest logical time (``now``) a caller may give: a float's exact integers.
MAX_TIME = 2**53
#: Below a float's largest value: an int beyond it cannot be added to a float time.
FLOAT_RANGE = 1e300
#: Seconds past any cap a delay meets where it is used: an int beyond a float's range
#: becomes this.
AS_LONG_AS_ANY = 1e18
#: A wait longer than this (seconds, about 31 years) is no wait limit at all.
FOREVER = 1e9


def is_finite(value: int | float) -> bool:
    """Whether ``value`` is finite; an ``int`` always is, however large (where
    :func:`math.isfinite` raises ``OverflowError`` past a float's range)."""
    return isinstance(value, int) or math.isfinite(value)


def wait_limit(timeout: object) -> float | None:
    """``timeout`` for :func:`asyncio.timeout`: ``None`` or seconds (at most
    :data:`FOREVER`, a longer one is ``None``); a ``TypeError`` or ``ValueError``
    naming it otherwise."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout must be a number of seconds or None, got {shown(timeout)}")
    if timeout != timeout:
        raise ValueError("timeout must be a number of seconds or None, got nan")
    return None if timeout > FOREVER else float(max(timeout, 0))
