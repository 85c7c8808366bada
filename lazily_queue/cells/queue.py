"""QueueCell: the reactive shell over any :class:`~lazily_queue.storage.QueueStorage`.

Readers (``head``, ``len``, ``is_empty``, ``is_full``, ``is_closed``) are memoized slots
with no graph dependencies; each successful operation clears exactly the kinds the
invalidation table names, in one batch, so no observer sees a torn transition.

MPSC is a usage rule, not a type: several producers that push inside one
``batch()`` get a deterministic interleaving and one coalesced invalidation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, TypeVar

from ..core.queue import (
    CLOSED,
    EMPTY,
    HEAD,
    IS_EMPTY,
    IS_FULL,
    LEN,
    POP,
    PUSH,
    QueuePopError,
    QueuePushError,
    pop_mask,
    push_mask,
    transition_mask,
)
from ..errors import QueueClosed, UnsupportedOperation
from ..reactive import Context, Slot, SlotGroup, resolve_context, wait_until
from ..storage.base import (
    ObservableQueueStorage,
    PeekableStorage,
    QueueStorage,
    ReplicatedQueueStorage,
    storage_capacity,
)
from ..storage.local import VecDequeStorage
from ..threads import LoopBridge, ThreadSafeQueue

T = TypeVar("T")

_PUSH_CLOSED = QueuePushError.Closed
_POP_CLOSED = QueuePopError.Closed


class QueueCell(Generic[T]):
    """A FIFO queue made of cells, bound to one reactive context (one event loop).

    Core (synchronous) surface: :meth:`try_push`, :meth:`try_pop`, :meth:`close` and the
    reactive readers. Awaitable extension: :meth:`push` waits while full,
    :meth:`pop` waits for an element, ``async for`` drains until closed.
    """

    def __init__(
        self,
        storage: QueueStorage[T] | None = None,
        *,
        capacity: int | None = None,
        context: Context | None = None,
        name: str = "queue",
    ) -> None:
        if storage is None:
            storage = VecDequeStorage(capacity)
        elif capacity is not None:
            raise ValueError("pass capacity to the storage backend, not to QueueCell")
        self.name = name
        self.ctx = resolve_context(context)
        self._storage = storage
        self._capacity = storage_capacity(storage)
        cap = self._capacity
        group = SlotGroup(self.ctx)
        self._readers = group
        # Creation order fixes the bits: HEAD, LEN, IS_EMPTY, IS_FULL, CLOSED.
        self.head: Slot[Any] = group.slot(self._read_head(storage), f"{name}.head")
        self.len: Slot[int] = group.slot(storage.len, f"{name}.len")
        self.is_empty: Slot[bool] = group.slot(lambda: storage.len() == 0, f"{name}.is_empty")
        self.is_full: Slot[bool] = group.slot(
            (lambda: False) if cap is None else (lambda: storage.len() >= cap),
            f"{name}.is_full",
        )
        self.is_closed: Slot[bool] = group.slot(storage.is_closed, f"{name}.closed")
        self._replicated = isinstance(storage, ReplicatedQueueStorage)
        self._observed = isinstance(storage, ObservableQueueStorage)
        if isinstance(storage, ObservableQueueStorage):
            storage.set_change_listener(self._on_transition)
        if isinstance(storage, VecDequeStorage) and type(storage) is VecDequeStorage:
            self._bind_deque_fast_path(storage)

    def __repr__(self) -> str:
        return f"QueueCell({self.name!r}, len={self._storage.len()}, storage={self._storage!r})"

    @staticmethod
    def _read_head(storage: QueueStorage[T]) -> Callable[[], Any]:
        if isinstance(storage, PeekableStorage):
            return storage.peek

        def unavailable() -> Any:
            raise UnsupportedOperation(
                f"{type(storage).__name__} has no peek(), so this queue has no head reader"
            )

        return unavailable

    @property
    def storage(self) -> QueueStorage[T]:
        return self._storage

    def capacity(self) -> int | None:
        """``None`` for unbounded, else the fixed bound."""
        return self._capacity

    def __len__(self) -> int:
        return self._storage.len()

    # -- invalidation ---------------------------------------------------------------------

    def _invalidate(self, mask: int) -> None:
        self._readers.invalidate(mask)

    def _on_transition(self, op: int, pre_len: int) -> None:
        if op == PUSH:
            self._invalidate(push_mask(pre_len, self._capacity))
        elif op == POP:
            self._invalidate(pop_mask(pre_len, self._capacity))
        else:
            self._invalidate(transition_mask(op, pre_len, self._capacity, False))

    # -- core surface ---------------------------------------------------------------------

    def try_push(self, value: T) -> QueuePushError | None:
        """Append ``value``; ``None`` on success, else ``Closed`` (checked first) or ``Full``."""
        storage = self._storage
        pre = storage.len()
        err = storage.try_push(value)
        if err is None and not self._observed:
            self._invalidate(push_mask(pre, self._capacity))
        return err

    def try_pop(self) -> T | QueuePopError:
        """The oldest element, or ``Empty`` (open) / ``Closed`` (closed and drained)."""
        storage = self._storage
        pre = storage.len()
        result = storage.try_pop()
        if not self._observed and not isinstance(result, QueuePopError):
            self._invalidate(pop_mask(pre, self._capacity))
        return result

    def close(self) -> None:
        """Close for pushes; idempotent and terminal. Elements still drain."""
        storage = self._storage
        was_closed = storage.is_closed()
        storage.close()
        if not was_closed and not self._observed:
            self._invalidate(CLOSED)

    def _bind_deque_fast_path(self, storage: VecDequeStorage[T]) -> None:
        """Same contract as the generic methods, inlined for the reference deque."""
        items = storage._items
        cap = self._capacity
        group = self._readers
        ctx = self.ctx
        full = QueuePushError.Full
        empty = QueuePopError.Empty

        def try_push(value: T) -> QueuePushError | None:
            if storage._closed:
                return _PUSH_CLOSED
            n = len(items)
            if cap is not None and n >= cap:
                return full
            items.append(value)
            if n == 0:
                mask = HEAD | LEN | IS_EMPTY
            else:
                mask = LEN
            if cap is not None and n + 1 == cap:
                mask |= IS_FULL
            if group._hot:
                group.invalidate(mask)
            else:
                group._stale |= mask
                ctx._write_epoch += 1
            return None

        def try_pop() -> T | QueuePopError:
            if not items:
                return _POP_CLOSED if storage._closed else empty
            n = len(items)
            value = items.popleft()
            if n == 1:
                mask = HEAD | LEN | IS_EMPTY
            else:
                mask = HEAD | LEN
            if cap is not None and n == cap:
                mask |= IS_FULL
            if group._hot:
                group.invalidate(mask)
            else:
                group._stale |= mask
                ctx._write_epoch += 1
            return value

        self.try_push = try_push  # type: ignore[method-assign]
        self.try_pop = try_pop  # type: ignore[method-assign]

    # -- awaitable extension --------------------------------------------------------------

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        """``try_push`` that also works on replicated storage (returns once committed)."""
        if self._replicated:
            return await self._storage.offer(value, timeout=timeout)  # type: ignore[attr-defined, no-any-return]
        return self.try_push(value)

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        """``try_pop`` that also works on replicated storage (returns once committed)."""
        if self._replicated:
            return await self._storage.poll(timeout=timeout)  # type: ignore[attr-defined, no-any-return]
        return self.try_pop()

    async def aclose(self, *, timeout: float | None = None) -> None:
        """``close`` that also works on replicated storage."""
        if self._replicated:
            await self._storage.close_async(timeout=timeout)  # type: ignore[attr-defined]
        else:
            self.close()

    async def push(self, value: T, *, timeout: float | None = None) -> None:
        """Push, waiting while the queue is full; raises :class:`QueueClosed` when closed."""
        async with asyncio.timeout(timeout):
            while True:
                err = await self.offer(value)
                if err is None:
                    return
                if err is _PUSH_CLOSED:
                    raise QueueClosed(f"{self.name}: queue is closed; push refused")
                await wait_until(self._has_room, context=self.ctx)

    async def pop(self, *, timeout: float | None = None) -> T:
        """Pop, waiting for an element; raises :class:`QueueClosed` once closed and drained.

        Cancellation is safe: an element is removed only in the same step that returns it.
        """
        async with asyncio.timeout(timeout):
            while True:
                result = await self.poll()
                if not isinstance(result, QueuePopError):
                    return result
                if result is _POP_CLOSED:
                    raise QueueClosed(f"{self.name}: queue is closed and drained")
                await wait_until(self._has_element, context=self.ctx)

    def _has_room(self) -> bool:
        return not self.is_full() or self.is_closed()

    def _has_element(self) -> bool:
        return not self.is_empty() or self.is_closed()

    def __aiter__(self) -> AsyncIterator[T]:
        return self._drain()

    async def _drain(self) -> AsyncIterator[T]:
        while True:
            try:
                value = await self.pop()
            except QueueClosed:
                return
            yield value

    # -- extended -------------------------------------------------------------------------

    def peek(self) -> Any:
        """The head without tracking: the oldest element or ``EMPTY``."""
        if isinstance(self._storage, PeekableStorage):
            return self._storage.peek()
        return EMPTY

    def threadsafe(self, loop: asyncio.AbstractEventLoop | None = None) -> ThreadSafeQueue[T]:
        """A blocking handle for other threads, running every call on ``loop``.

        ``loop`` defaults to the running loop, so call this on the owning loop.
        See :mod:`lazily_queue.threads`.
        """
        return ThreadSafeQueue(self, LoopBridge(loop))

    def readers(self) -> dict[str, Slot[Any]]:
        """Every reader kind by its spec name (``closed`` is the ``is_closed`` reader)."""
        return {
            "head": self.head,
            "len": self.len,
            "is_empty": self.is_empty,
            "is_full": self.is_full,
            "closed": self.is_closed,
        }
