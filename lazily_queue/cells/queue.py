"""QueueCell: the reactive shell over any :class:`~lazily_queue.storage.QueueStorage`.

Readers (``head``, ``len``, ``is_empty``, ``is_full``, ``is_closed``) are memoized slots
with no graph dependencies; each successful operation clears exactly the kinds the
invalidation table names, in one batch, so no observer sees a torn transition.

MPSC is a usage rule, not a type: several producers that push inside one
``batch()`` get a deterministic interleaving and one coalesced invalidation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Generic, TypeVar

from ..core.dedup import check_msg_id
from ..core.fifo import Guard, guarded
from ..core.limits import Limits
from ..core.push_options import PushOptions
from ..core.queue import (
    EMPTY,
    POP,
    PUSH,
    QueuePopError,
    QueuePushError,
    pop_mask,
    push_mask,
    transition_mask,
)
from ..errors import QueueClosed, UnsupportedOperation
from ..reactive import Context, Slot, SlotGroup, wait_until
from ..serializers import Codec, Serializer
from ..storage.capabilities import StorageCapabilities, stop_check, unreachable_check
from ..storage.local import VecDequeStorage
from ..storage.queue import (
    QueueStorage,
    SyncQueueStorage,
    as_dedup,
    as_observable,
    as_peekable,
    as_reporting,
    as_sync,
    queue_capabilities,
)
from ..storage.serializing import SerializingQueueStorage
from ..threads import LoopBridge, ThreadSafeQueue
from .deadline import NO_DEADLINE, Deadline, no_wait
from .expiry import EXPIRED, expired_reader, expiring_deque
from .once import no_dedup
from .queue_batches import DEFAULT_PREFETCH, FIRST_PREFETCH, QueueBatches
from .queue_limits import (
    QuotaReaders,
    declared_limits,
    full_rule,
    limit_exceeded,
    limited_deque,
    never_fits,
    stored_size,
)
from .queue_options import QueueOptions
from .queue_sync import QueueSyncOps

T = TypeVar("T")

_PUSH_CLOSED = QueuePushError.Closed


class QueueCell(QueueSyncOps[T], QueueOptions, QueueBatches[T], Generic[T]):
    """A FIFO queue made of cells, bound to one reactive context (one event loop).

    On every backend: ``await push(v)`` (waits while full), ``await pop()`` (waits for
    an element), their non-waiting twins ``await offer(v)`` and ``await poll()``,
    ``await close()``, ``async for``, and the reactive readers. On a backend that
    declares the ``sync`` capability (the local deque), the synchronous core too:
    :attr:`try_push`, :attr:`try_pop`, :meth:`try_close`; elsewhere they raise
    :class:`~lazily_queue.errors.UnsupportedOperation` naming the awaitable to use.

    ``try_push(value)`` returns ``None`` on success, else ``Closed`` (checked first) or
    ``Full``; ``try_pop()`` returns the oldest element, or ``Empty`` (open) /
    ``Closed`` (closed and drained). ``serializer`` (see :mod:`lazily_queue.serializers`)
    encodes what is pushed and decodes what comes out; ``clock`` (seconds, as
    ``time.time``) stamps the enqueue time of each element of the local deque. Over a
    backend that keeps message ids (capability ``messages``), ``pop_message()`` and
    ``messages()`` hand out :class:`~.message.Message` objects (:mod:`.queue_messages`).
    """

    PREFETCH = DEFAULT_PREFETCH
    FIRST_PREFETCH = FIRST_PREFETCH

    try_push: Callable[[T], QueuePushError | None]
    try_pop: Callable[[], T | QueuePopError]

    def __init__(
        self,
        storage: QueueStorage[T] | None = None,
        *,
        capacity: int | None = None,
        context: Context | None = None,
        name: str = "queue",
        serializer: Serializer[T] | None = None,
        clock: Callable[[], float] | None = None,
        ttl: float | None = None,
        limits: Limits | None = None,
    ) -> None:
        Limits.checked(limits, name)
        if storage is None:
            storage = (expiring_deque(capacity, clock, ttl) if limits is None and ttl is not None
                       else VecDequeStorage(capacity, clock=clock) if limits is None
                       else limited_deque(capacity, limits, clock, ttl))
        elif capacity is not None or clock is not None or limits is not None or ttl is not None:
            raise ValueError("pass capacity, limits, clock and ttl to the storage backend, "
                             "not to QueueCell")
        if serializer is not None:
            storage = SerializingQueueStorage(storage, Codec(serializer, name))
        self.serializer = serializer
        self.name = name
        self._take_context(context)
        self._caps = queue_capabilities(storage)
        self._storage = storage
        self._raise_if_stopped = stop_check(storage)
        self._unreachable = unreachable_check(storage)
        self._capacity = storage.capacity()
        cap = self._capacity
        group = SlotGroup(self.ctx)
        self._readers = group
        # Creation order fixes the bits: HEAD, LEN, IS_EMPTY, IS_FULL, CLOSED.
        self.head: Slot[Any] = group.slot(self._read_head(storage), f"{name}.head")
        self.len: Slot[int] = group.slot(storage.len, f"{name}.len")
        self.is_empty: Slot[bool] = group.slot(lambda: storage.len() == 0, f"{name}.is_empty")
        self.is_full: Slot[bool] = group.slot(
            full_rule(storage, cap), f"{name}.is_full",
        )
        self.is_closed: Slot[bool] = group.slot(storage.is_closed, f"{name}.closed")
        #: Elements that expired without being delivered (capability ``expiry``).
        self.expired: Slot[int] = group.slot(expired_reader(storage), f"{name}.expired")
        self._expiring = self._caps.expiry
        self._delays_seen = 0  # the delayed_len bit once a delayed push was reported
        self._limits = declared_limits(storage)
        self.quota = QuotaReaders.of(name, storage, group)
        #: Elements committed and not due yet (capability ``scheduling``).
        self.delayed_len: Slot[int] = self._delayed_reader(group)
        self._sync: SyncQueueStorage[T] | None = as_sync(storage)
        self._dedup = as_dedup(storage)
        observable = as_observable(storage)
        self._observed = observable is not None
        if observable is not None:
            observable.set_change_listener(self._on_transition)
        reporting = as_reporting(storage)
        if reporting is not None and not self._observed:
            # The deque's fast path: the invalidation rule inlined, one call per op.
            ops = reporting.reporting_ops(group.invalidate)
            if self._checks_thread:
                ops = guarded(ops, Guard(self.ctx, self._away))
            self.try_push, self.try_pop = ops
        elif self._sync is not None:
            self.try_push, self.try_pop = self._sync_ops(self._sync)
        else:
            self.try_push, self.try_pop = self._refusing_ops()

    def __repr__(self) -> str:
        return f"QueueCell({self.name!r}, len={self._storage.len()}, storage={self._storage!r})"

    def _read_head(self, storage: QueueStorage[T]) -> Callable[[], Any]:
        peekable = as_peekable(storage)
        if peekable is not None:
            return peekable.peek

        def unavailable() -> Any:
            raise UnsupportedOperation(
                f"{type(storage).__name__} has no peek(), so this queue has no head reader"
            )

        return unavailable

    @property
    def storage(self) -> QueueStorage[T]:
        return self._storage

    @property
    def capabilities(self) -> StorageCapabilities:
        """What the backend declares beyond the awaitable operations (``sync``, ...)."""
        return self._caps

    def capacity(self) -> int | None:
        """``None`` for unbounded, else the fixed bound."""
        return self._capacity

    def limits(self) -> Limits | None:
        """The limits the queue was declared with (``None``: only ``capacity``)."""
        return self._limits

    def __len__(self) -> int:
        return self._storage.len()

    # -- invalidation ---------------------------------------------------------------------

    def _invalidate(self, mask: int) -> None:
        if self.quota is not None:  # a push may drop: the readers whose value moved
            mask = self.quota.changed() | (mask & (self._delayed_bit | EXPIRED))
        self._readers.invalidate(mask)

    def _on_transition(self, op: int, pre_len: int) -> None:
        if op != PUSH and self._expiring:
            self._invalidate(EXPIRED)
        if op == PUSH:
            self._invalidate(push_mask(pre_len, self._capacity) | self._delays_seen)
        elif op == POP:
            self._invalidate(pop_mask(pre_len, self._capacity))
        else:  # a delayed push (DELAY), a reset: the delayed elements moved too
            self._delays_seen = self._delayed_bit
            self._invalidate(transition_mask(op, pre_len, self._capacity, False)
                             | self._delayed_bit)

    # -- awaitable surface (every backend) ------------------------------------------------

    async def offer(
        self, value: T, *, msg_id: str | None = None, ttl: float | None = None,
        timeout: float | None = None, headers: Mapping[str, str] | None = None,
        delay: float | None = None, not_before: datetime | None = None,
    ) -> QueuePushError | None:
        """Append ``value`` without waiting for room: ``None``, or ``Closed`` / ``Full``.

        Over a replicated backend it returns once committed (bounded as any operation of
        the backend; ``timeout`` has no wait to bound: :mod:`.deadline`).
        With ``msg_id`` (capability ``dedup``) it applies once: while the id is in the
        backend's dedup window a repeat applies nothing and returns ``None``. With
        ``ttl`` (seconds, capability ``expiry``) it expires that long after its push.
        With ``headers`` (capability ``headers``: a ``str`` -> ``str`` mapping within the
        limits of :mod:`~lazily_queue.core.headers`, else
        :class:`~lazily_queue.errors.InvalidHeaders` before anything is sent) the element
        carries them: message pops read them as ``Message.headers``. With ``delay``
        (seconds >= 0) or ``not_before`` (an aware datetime; capability ``scheduling``,
        else :class:`~lazily_queue.errors.InvalidSchedule` for a bad value) it is
        committed now and poppable from its due time (:mod:`.queue_options`). The
        options combine on one element, checked before anything is sent.
        """
        self._own()
        no_wait(timeout)
        if (ttl is not None or headers is not None or delay is not None
                or not_before is not None):
            options = PushOptions.checked(msg_id=msg_id, headers=headers, ttl=ttl,
                                          delay=delay, not_before=not_before)
            return await self._offer_options(value, options, None)
        if msg_id is None:
            if self._sync is not None:
                return self.try_push(value)
            return await self._storage.offer(value)
        if (storage := self._dedup) is None:
            raise no_dedup(self.name, self._storage, "push")
        pre = storage.len()
        err = await storage.offer_once(value, check_msg_id(msg_id))
        if err is None and not self._observed and storage.len() != pre:
            self._invalidate(push_mask(pre, self._capacity))  # a sync backend's push
        return err

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        """Remove the oldest element without waiting: it, or ``Empty`` / ``Closed``
        (``timeout`` has no wait to bound: :mod:`.deadline`)."""
        self._own()
        no_wait(timeout)
        if self._sync is not None:
            return self.try_pop()
        return await self._storage.poll()

    async def close(self, *, timeout: float | None = None) -> None:
        """Close for pushes; idempotent and terminal. Elements still drain (``timeout``
        has no wait to bound: :mod:`.deadline`)."""
        self._own()
        no_wait(timeout)
        if self._sync is not None:
            self.try_close()
        else:
            await self._storage.close()

    async def push(
        self, value: T, *, msg_id: str | None = None, ttl: float | None = None,
        timeout: float | None = None, wait: bool = True,
        headers: Mapping[str, str] | None = None, delay: float | None = None,
        not_before: datetime | None = None,
    ) -> None:
        """Push, waiting while the queue is full; raises :class:`QueueClosed` when closed.

        ``msg_id`` makes it exactly-once (see :meth:`offer`): a producer that retries
        with the same id after an error that left the outcome unknown never duplicates.
        ``ttl`` (seconds) makes it expire that long after its push (see :meth:`offer`).
        ``wait=False``: a full queue raises :class:`~lazily_queue.errors.LimitExceeded`
        (naming the limit) instead of waiting for room. ``timeout`` bounds the wait for
        room (:mod:`.deadline`): ``timeout=0`` pushes when there is room and raises
        ``TimeoutError`` otherwise.
        ``headers`` travel with the element, ``delay`` / ``not_before`` delay it (see
        :meth:`offer`); the options combine.
        """
        self._own()
        options = None
        if ttl is not None or headers is not None or delay is not None or (
                not_before is not None):  # refused before waiting
            options = PushOptions.checked(msg_id=msg_id, headers=headers, ttl=ttl,
                                          delay=delay, not_before=not_before)
        deadline = NO_DEADLINE if timeout is None else Deadline(timeout)
        while True:
            if options is not None:
                err = await self._offer_options(value, options, None)
            elif msg_id is not None:
                err = await self.offer(value, msg_id=msg_id)
            else:  # self.offer inlined: one coroutine frame less per push
                err = (self.try_push(value) if self._sync is not None
                       else await self._storage.offer(value))
            if err is None:
                return
            if err is _PUSH_CLOSED:
                raise QueueClosed.push_refused(self.name)
            size = stored_size(self._storage, self._limits, value)
            if (never := never_fits(self.name, self._limits, size)) is not None:
                raise never  # no room made for it would do: waiting would spin
            if not wait:
                raise limit_exceeded(self.name, "queue", self._limits, self._capacity,
                                     None if self.quota is None else self.quota.quota(),
                                     value)
            async with deadline.waiting(f"push to queue {self.name!r}: no room",
                                        self._unreachable):
                await wait_until(self._room_for(size), context=self.ctx)

    async def pop(self, *, timeout: float | None = None) -> T:
        """Pop, waiting for an element; raises :class:`QueueClosed` once closed and drained.

        Cancellation is safe: an element is removed only in the same step that returns it.
        ``timeout`` bounds the wait for an element (:mod:`.deadline`): ``timeout=0``
        pops one that is there and raises ``TimeoutError`` otherwise.
        """
        return await self._until_taken(self.poll, Deadline(timeout))

    def _has_room(self) -> bool:
        self._raise_if_stopped()
        return not self.is_full() or self.is_closed()

    def _room_for(self, size: int | None) -> Callable[[], bool]:
        """What a push refused as full waits for: room for its element of ``size`` bytes
        (:func:`.queue_limits.stored_size`; ``None``: no ``max_bytes``). Under such a
        limit a queue that is not full (it takes a one-byte element) may still refuse a
        larger one; waiting on :meth:`_has_room` alone would retry at once, forever (a
        spinning loop locally, a proposal after another on a node)."""
        quota = self.quota
        if quota is None or size is None:
            return self._has_room

        def room() -> bool:
            if not self._has_room():
                return False
            if self.is_closed():
                return True
            quota.bytes()  # read, so that a change of the bytes held wakes the wait
            self.len()
            held = quota.quota()
            return held is None or held.check(size) is None
        return room

    def _has_element(self) -> bool:
        self._raise_if_stopped()
        return not self.is_empty() or (self.is_closed() and self.delayed_len() == 0)

    # -- extended -------------------------------------------------------------------------

    def peek(self) -> Any:
        """The head without tracking: the oldest element or ``EMPTY``."""
        peekable = as_peekable(self._storage)
        return EMPTY if peekable is None else peekable.peek()

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
            **({} if self.quota is None else self.quota.readers()),
        }



__all__ = ["DEFAULT_PREFETCH", "FIRST_PREFETCH", "QueueCell"]
