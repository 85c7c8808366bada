"""The reference FIFO backend: an unbounded or bounded deque with reject.

Plain state with no reactive parts, so the Raft state machine keeps its queues in it too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from .queue import EMPTY, QueuePopError, QueuePushError, validate_capacity

T = TypeVar("T")

_FULL = QueuePushError.Full
_PUSH_CLOSED = QueuePushError.Closed
_EMPTY = QueuePopError.Empty
_POP_CLOSED = QueuePopError.Closed


class VecDequeStorage(Generic[T]):
    """FIFO over ``collections.deque``; at capacity ``try_push`` rejects with ``Full``."""

    __slots__ = ("_capacity", "_closed", "_items")

    def __init__(self, capacity: int | None = None, elements: Iterable[T] = ()) -> None:
        self._capacity = validate_capacity(capacity)
        self._items: deque[T] = deque(elements)
        self._closed = False
        if self._capacity is not None and len(self._items) > self._capacity:
            raise ValueError(
                f"{len(self._items)} initial elements exceed capacity {self._capacity}"
            )

    def __repr__(self) -> str:
        return f"VecDequeStorage(len={len(self._items)}, capacity={self._capacity})"

    def try_push(self, value: T) -> QueuePushError | None:
        if self._closed:
            return _PUSH_CLOSED
        if self._capacity is not None and len(self._items) >= self._capacity:
            return _FULL
        self._items.append(value)
        return None

    def try_pop(self) -> T | QueuePopError:
        if self._items:
            return self._items.popleft()
        return _POP_CLOSED if self._closed else _EMPTY

    def len(self) -> int:
        return len(self._items)

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True

    def peek(self) -> Any:
        return self._items[0] if self._items else EMPTY

    def capacity(self) -> int | None:
        return self._capacity

    def elements(self) -> list[T]:
        """A FIFO-ordered copy (the snapshot form)."""
        return list(self._items)
