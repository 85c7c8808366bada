"""The synchronous core of :class:`~.queue.QueueCell` (capability ``sync``: the local
deque); elsewhere ``try_push`` / ``try_pop`` / ``try_close`` raise
:class:`~lazily_queue.errors.UnsupportedOperation` naming the awaitable to use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..core.queue import CLOSED, QueuePopError, QueuePushError, pop_mask, push_mask
from ..errors import UnsupportedOperation
from ..storage.queue import QueueStorage, SyncQueueStorage

T = TypeVar("T")


class QueueSyncOps(Generic[T]):
    """Mixed into :class:`~.queue.QueueCell` (which sets the attributes below)."""

    name: str
    _storage: QueueStorage[T]
    _capacity: int | None
    _observed: bool
    _sync: SyncQueueStorage[T] | None
    _invalidate: Callable[[int], None]
    _at_home: Callable[[str], None]  # the cell's thread check (:mod:`.loop_owner`)
    _checked: Callable[[str, Any], Any]  # a call checking its thread (the same)

    def _sync_ops(
        self, storage: SyncQueueStorage[T]
    ) -> tuple[Callable[[T], QueuePushError | None], Callable[[], T | QueuePopError]]:
        """``try_push`` / ``try_pop`` through the generic synchronous seam."""
        cap = self._capacity
        invalidate = self._invalidate

        def try_push(value: T) -> QueuePushError | None:
            pre = storage.len()
            err = storage.try_push(value)
            if err is None and not self._observed:
                invalidate(push_mask(pre, cap))
            return err

        def try_pop() -> T | QueuePopError:
            pre = storage.len()
            result = storage.try_pop()
            if not self._observed and not isinstance(result, QueuePopError):
                invalidate(pop_mask(pre, cap))
            return result

        return self._checked("try_push", try_push), self._checked("try_pop", try_pop)

    def _refusing_ops(
        self,
    ) -> tuple[Callable[[T], QueuePushError | None], Callable[[], T | QueuePopError]]:
        def try_push(value: T) -> QueuePushError | None:
            raise self._no_sync("try_push", "offer(value)", "push(value)")

        def try_pop() -> T | QueuePopError:
            raise self._no_sync("try_pop", "poll()", "pop()")

        return try_push, try_pop

    def try_close(self) -> None:
        """Close for pushes; idempotent and terminal. Elements still drain."""
        storage = self._sync
        if storage is None:
            raise self._no_sync("try_close", "close()")
        self._at_home("try_close")
        was_closed = storage.is_closed()
        storage.try_close()
        if not was_closed and not self._observed:
            self._invalidate(CLOSED)

    def _no_sync(self, method: str, awaitable: str,
                 waiting: str | None = None) -> UnsupportedOperation:
        """The refusal of ``method``, naming the ``awaitable`` to use (and its ``waiting``
        twin, if any)."""
        also = "" if waiting is None else f" (or `await {self.name}.{waiting}`, which waits)"
        return UnsupportedOperation(
            f"{self.name}: {method} needs a synchronous backend and "
            f"{type(self._storage).__name__} is not one; use `await {self.name}.{awaitable}` "
            f"instead{also}"
        )
