"""Flavor-neutral QueueCell rules: outcomes, the EMPTY marker and the invalidation table.

The invalidation set of an operation is a function of the operation, the bound, the
pre-operation length and the closed flag only, never of element values. Reader kinds
are bit flags so one transition is one small integer.
"""

from __future__ import annotations

import enum
from typing import Final

from ..errors import shown


class QueuePushError(enum.Enum):
    """Why ``try_push`` refused; state is unchanged."""

    Full = "Full"
    Closed = "Closed"


class QueuePopError(enum.Enum):
    """Why ``try_pop`` returned no element; ``Empty`` is open-and-empty."""

    Empty = "Empty"
    Closed = "Closed"


class _EmptyType:
    """The ``head`` of an empty queue (distinct from a ``None`` element)."""

    _instance: _EmptyType | None = None

    def __new__(cls) -> _EmptyType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "EMPTY"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "EMPTY"


EMPTY: Final = _EmptyType()


class QueueReader(enum.IntFlag):
    """Reader kinds of a QueueCell."""

    HEAD = 1
    LEN = 2
    IS_EMPTY = 4
    IS_FULL = 8
    CLOSED = 16


HEAD: Final = 1
LEN: Final = 2
IS_EMPTY: Final = 4
IS_FULL: Final = 8
CLOSED: Final = 16

# Transition kinds a storage reports to its change listener.
PUSH: Final = 0
POP: Final = 1
CLOSE: Final = 2
#: An element returned to the head (a replicated pop whose receiver was gone).
UNPOP: Final = 3
#: The whole state was replaced (a snapshot was installed): every reader changed.
RESET: Final = 4
#: A delayed element was committed (no ready reader changes; ``delayed_len`` does).
DELAY: Final = 5
ALL_READERS: Final = HEAD | LEN | IS_EMPTY | IS_FULL | CLOSED


def push_mask(pre_len: int, capacity: int | None) -> int:
    """Readers invalidated by a successful push from length ``pre_len``."""
    mask = LEN
    if pre_len == 0:
        mask |= HEAD | IS_EMPTY
    if capacity is not None and pre_len + 1 == capacity:
        mask |= IS_FULL
    return mask


def pop_mask(pre_len: int, capacity: int | None) -> int:
    """Readers invalidated by a successful pop from length ``pre_len``."""
    mask = LEN | HEAD
    if pre_len == 1:
        mask |= IS_EMPTY
    if capacity is not None and pre_len == capacity:
        mask |= IS_FULL
    return mask


def close_mask(was_closed: bool) -> int:
    """Readers invalidated by ``close``: ``closed`` the first time, nothing after."""
    return 0 if was_closed else CLOSED


def transition_mask(op: int, pre_len: int, capacity: int | None, was_closed: bool) -> int:
    """The invalidation set of one reported transition."""
    if op == PUSH:
        return push_mask(pre_len, capacity)
    if op == POP:
        return pop_mask(pre_len, capacity)
    if op == CLOSE:
        return close_mask(was_closed)
    if op == UNPOP:
        return push_mask(pre_len, capacity) | HEAD
    if op == RESET:
        return ALL_READERS if capacity is not None else ALL_READERS & ~IS_FULL
    if op == DELAY:
        return 0
    raise ValueError(f"unknown queue transition kind {shown(op)}")


def validate_capacity(capacity: int | None) -> int | None:
    """``None`` (unbounded) or an int >= 1; anything else raises ``ValueError``."""
    if capacity is None:
        return None
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise ValueError(f"capacity must be an int >= 1 or None, got {shown(capacity)}")
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1 (or None for unbounded), got {capacity}")
    return capacity
