"""The storage seam: what a QueueCell shell needs from a backend.

``QueueStorage`` has exactly five required methods. ``peek`` and ``capacity`` are optional
capabilities. A backend whose state changes outside the shell's own calls (a Raft
follower applying committed entries) also implements :class:`ObservableQueueStorage`:
it reports every successful transition to the listener, and the shell invalidates from
those reports only. A backend whose operations need a round trip implements
:class:`ReplicatedQueueStorage`; the shell's awaitable methods then go through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..core.queue import QueuePopError, QueuePushError

T = TypeVar("T")

QueueChangeListener = Callable[[int, int], None]
"""``listener(op, pre_len)``: ``op`` is ``PUSH``, ``POP`` or a first ``CLOSE``."""


@runtime_checkable
class QueueStorage(Protocol[T]):
    """A FIFO backend. Errors leave the state unchanged."""

    def try_push(self, value: T) -> QueuePushError | None:
        """Append ``value``; ``Closed`` is checked before ``Full``."""
        ...

    def try_pop(self) -> T | QueuePopError:
        """Remove and return the oldest element; drains after close."""
        ...

    def len(self) -> int: ...

    def is_closed(self) -> bool: ...

    def close(self) -> None:
        """Idempotent and terminal."""
        ...


@runtime_checkable
class PeekableStorage(Protocol):
    def peek(self) -> Any:
        """The oldest element, or ``EMPTY``."""
        ...


@runtime_checkable
class BoundedStorage(Protocol):
    def capacity(self) -> int | None: ...


@runtime_checkable
class ObservableQueueStorage(Protocol):
    def set_change_listener(self, listener: QueueChangeListener | None) -> None:
        """Report every successful transition, including ones the shell did not make."""
        ...


@runtime_checkable
class ReplicatedQueueStorage(Protocol[T]):
    """Operations that complete only after a round trip (for example a Raft commit)."""

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        """Push without waiting for space: ``None`` once committed, or the refusal."""
        ...

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        """Pop without waiting for an element, once committed."""
        ...

    async def close_async(self, *, timeout: float | None = None) -> None: ...


def storage_capacity(storage: object) -> int | None:
    """The backend's bound, or ``None`` when it has no ``capacity`` capability."""
    if isinstance(storage, BoundedStorage):
        return storage.capacity()
    return None
