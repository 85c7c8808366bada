"""What the cells share for message expiry (capability ``expiry``, :mod:`..core.expiry`).

A TTL is given in seconds: per message (``push(value, ttl=...)``) or per cell where the
cell is opened (``ttl=``: the default of every element pushed without one; a topic has
``max_age=`` too). Bad values raise :class:`~lazily_queue.errors.InvalidTtl` before
anything is proposed; a backend without the capability refuses a per-message TTL with
:class:`~lazily_queue.errors.UnsupportedOperation` naming it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import UnsupportedOperation

#: The ``expired`` reader's bit in a cell's reader group (created after the spec's readers).
EXPIRED = 32


def expiring_deque(capacity: int | None, clock: Callable[[], float] | None,
                   ttl: float) -> Any:
    """The local deque of a cell opened with a default ``ttl`` (on ``clock``, by default
    ``time.time``)."""
    from ..storage.local_expiry import ExpiringDequeStorage

    return ExpiringDequeStorage(capacity, ttl=ttl, clock=clock or time.time)


def expired_reader(storage: Any) -> Any:
    """The ``expired`` reader's read function over ``storage`` (0 without expiry)."""
    if not storage.capabilities.expiry:
        return lambda: 0
    return storage.expired_count


def no_expiry(cell: str, storage: object, verb: str) -> UnsupportedOperation:
    """The error of a ``ttl`` given to a cell whose backend does not declare ``expiry``."""
    name = type(storage).__name__
    return UnsupportedOperation(
        f"{cell}: {name} has no message expiry, so a {verb} cannot take a ttl; "
        f"{verb} without ttl (a local cell expires messages when opened with ttl=)")


