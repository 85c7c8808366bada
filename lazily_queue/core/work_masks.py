"""Reader masks of a work queue: the reader kinds, which readers each change
invalidates, a transition's result plus its mask, and the checks of a work queue's
configuration.

A work queue cell creates its readers in the order of their bits: the spec's four
(``pending_len``, ``is_empty``, ``in_flight_len``, ``dead_letter_len``), then
``delayed_len`` and ``expired``, then, on a work queue with limits only, the quota's
``bytes`` and ``dropped``. Every backend (local, replicated, a client's) and every
replicated op reports its changes with these bits.
"""

from __future__ import annotations

import enum
from typing import Final, Generic, NamedTuple, TypeVar

from ..errors import InvalidConfiguration, shown
from .numbers import FLOAT_RANGE, is_finite
from .snapshot import is_int

R = TypeVar("R")

PENDING_LEN: Final = 1
IS_EMPTY: Final = 2
IN_FLIGHT_LEN: Final = 4
DEAD_LETTER_LEN: Final = 8
#: ``delayed_len``: items committed but not claimable before their due time.
DELAYED_LEN: Final = 16
#: ``expired``: items that expired before their first delivery.
EXPIRED: Final = 32
#: The quota's ``bytes`` reader (a work queue with limits only).
HELD_BYTES: Final = 64
#: The quota's ``dropped`` reader (a work queue with limits only).
DROPPED: Final = 128
#: Every reader each work queue cell has: what a wholesale change invalidates (the
#: queue deleted, a group's queue made, a backend reset). A quota's bits are not in it:
#: a cell without limits has no such readers.
ALL_WORK_READERS: Final = (PENDING_LEN | IS_EMPTY | IN_FLIGHT_LEN | DEAD_LETTER_LEN
                           | DELAYED_LEN | EXPIRED)


class WorkReader(enum.IntFlag):
    """Reader kinds of a WorkQueueCell."""

    PENDING_LEN = PENDING_LEN
    IS_EMPTY = IS_EMPTY
    IN_FLIGHT_LEN = IN_FLIGHT_LEN
    DEAD_LETTER_LEN = DEAD_LETTER_LEN
    DELAYED_LEN = DELAYED_LEN


class WorkTransition(NamedTuple, Generic[R]):
    """The result of one work-queue operation and the reader kinds it invalidates."""

    result: R
    mask: int


def change_mask(before: tuple[int, int, int], after: tuple[int, int, int]) -> int:
    """Readers invalidated by going from ``before`` to ``after`` (pending, in-flight, dead)."""
    mask = 0
    if before[0] != after[0]:
        mask |= PENDING_LEN
        if (before[0] == 0) != (after[0] == 0):
            mask |= IS_EMPTY
    if before[1] != after[1]:
        mask |= IN_FLIGHT_LEN
    if before[2] != after[2]:
        mask |= DEAD_LETTER_LEN
    return mask


def validate_config(visibility_timeout: object, max_deliveries: object) -> tuple[float, int]:
    """Reject ``visibility_timeout <= 0`` and ``max_deliveries < 1``."""
    vt = visibility_timeout
    if isinstance(vt, bool) or not isinstance(vt, int | float) or not is_finite(vt) or vt <= 0 \
            or vt > FLOAT_RANGE:  # an int past a float's range: no time adds to it
        raise InvalidConfiguration(f"visibility_timeout must be a number > 0, got {shown(vt)}")
    if not is_int(max_deliveries) or max_deliveries < 1:  # type: ignore[operator]
        raise InvalidConfiguration(
            f"max_deliveries must be an int >= 1, got {shown(max_deliveries)}")
    return vt, max_deliveries  # type: ignore[return-value]
