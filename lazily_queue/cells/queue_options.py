"""The push options of :class:`~.queue.QueueCell` combined, and delayed elements.

A push given any of ``ttl``, ``headers``, ``delay`` / ``not_before`` (with or without a
``msg_id``) is checked once into a :class:`~lazily_queue.core.push_options.PushOptions`
(typed errors: ``InvalidMessageId``, ``InvalidHeaders``, ``InvalidTtl``,
``InvalidSchedule``) and goes to the backend as one ``offer_options``; each option needs
its capability (``dedup``, ``headers``, ``expiry``, ``scheduling`` for a delivery time)
and a backend without it refuses with :class:`~lazily_queue.errors.UnsupportedOperation`
naming the backend.

A delayed element is committed at once and poppable from its due time
(:mod:`lazily_queue.core.fifo_delayed`): ``len`` counts the ready elements, the
``delayed_len`` reader the delayed ones. A popper waiting on a local queue wakes at the
earliest due time on the cell's clock; on a replicated queue the leader's maintenance
proposes the promotion, which every member applies and reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.push_options import PushOptions
from ..core.queue import ALL_READERS, QueuePushError, pop_mask, push_mask
from ..errors import UnsupportedOperation
from ..reactive import Context, Slot, SlotGroup, wait_until
from ..storage.capabilities import StorageCapabilities
from ..storage.queue import QueueStorage, SyncQueueStorage
from .push_checks import refuse_unsupported


class QueueOptions:
    """Mixed into :class:`~.queue.QueueCell` (which sets the attributes below)."""

    name: str
    ctx: Context
    _caps: StorageCapabilities
    _storage: QueueStorage[Any]
    _observed: bool
    _sync: SyncQueueStorage[Any] | None
    _delayed_bit: int
    _capacity: int | None
    #: Whether try_push / try_pop go through the backend (:meth:`_use_promoting_ops`).
    _promoting = False
    delayed_len: Slot[int]
    try_push: Any
    try_pop: Any
    _checked: Callable[[str, Any], Any]  # a call checking its thread (:mod:`.loop_owner`)

    def _invalidate(self, mask: int) -> None:
        raise NotImplementedError

    def _sync_ops(self, storage: SyncQueueStorage[Any]) -> Any:
        raise NotImplementedError

    def _delayed_reader(self, group: SlotGroup) -> Slot[int]:
        """The ``delayed_len`` reader (0 on a backend without delayed delivery)."""
        before = group.all_bits()
        storage: Any = self._storage
        read = storage.delayed_len if self._caps.scheduling else (lambda: 0)
        slot: Slot[int] = group.slot(read, f"{self.name}.delayed_len")
        self._delayed_bit = group.all_bits() & ~before
        return slot

    async def _offer_options(self, value: Any, options: PushOptions,
                             timeout: float | None) -> QueuePushError | None:
        """:meth:`offer` with its options already checked (the cell's, or a local
        transaction's)."""
        storage: Any = self._storage
        caps = self._caps
        refuse_unsupported(self.name, storage, caps, msg_id=options.msg_id is not None,
                           headers=options.headers is not None,
                           ttl=options.ttl_ms is not None)
        if options.delayed and not caps.scheduling:
            raise UnsupportedOperation(
                f"{self.name}: {type(storage).__name__} does not support delayed delivery "
                "(no 'scheduling' capability); push without delay= or not_before=")
        if not (caps.scheduling or caps.headers or caps.expiry):
            # no offer_options (the capabilities checked require it): the checks above
            # refused every option but a msg_id
            if options.msg_id is None:
                return await storage.offer(value, timeout=timeout)  # type: ignore[no-any-return]
            return await storage.offer_once(value, options.msg_id,  # type: ignore[no-any-return]
                                            timeout=timeout)
        if self._observed:
            return await storage.offer_options(value, options,  # type: ignore[no-any-return]
                                               timeout=timeout)
        before = self._counts()
        err: QueuePushError | None = await storage.offer_options(value, options,
                                                                 timeout=timeout)
        if options.delayed and self._sync is not None:
            self._use_promoting_ops(self._sync)
        self._invalidate(self._moved(before))  # a sync backend's push
        return err

    def _counts(self) -> tuple[int, int]:
        storage: Any = self._storage
        return storage.len(), storage.delayed_len() if self._caps.scheduling else 0

    def _moved(self, before: tuple[int, int]) -> int:
        """The readers a synchronous change from ``before`` (ready, delayed) moved: a
        push's or a pop's when it is one, every reader when elements fell due too."""
        (pre, delayed), (now, delayed_now) = before, self._counts()
        mask = 0 if delayed == delayed_now else self._delayed_bit
        if delayed_now < delayed:  # elements fell due: several changes at once
            return mask | ALL_READERS
        if now == pre + 1:
            return mask | push_mask(pre, self._capacity)
        if now == pre - 1:
            return mask | pop_mask(pre, self._capacity)
        return mask if now == pre else mask | ALL_READERS

    def _use_promoting_ops(self, storage: SyncQueueStorage[Any]) -> None:
        """From the first delayed element on, ``try_push`` / ``try_pop`` go through the
        backend (its pops make due elements ready) and invalidate the readers the change
        moved (:meth:`_moved`). Until then the cell keeps the deque's fast path, which
        knows nothing of delayed elements: a queue that never delays pays nothing."""
        if self._promoting:
            return
        self._promoting = True
        invalidate, counts, moved = self._invalidate, self._counts, self._moved

        def try_push(value: Any) -> Any:
            before = counts()
            err = storage.try_push(value)
            invalidate(moved(before))
            return err

        def try_pop() -> Any:
            before = counts()
            result = storage.try_pop()
            invalidate(moved(before))
            return result

        self.try_push = self._checked("try_push", try_push)
        self.try_pop = self._checked("try_pop", try_pop)

    def delayed(self) -> list[tuple[int, int, Any]]:
        """``(due_ms, id, value)`` of the delayed elements in the order they fall due
        (due in the backend's milliseconds: the cell's clock, or the leader's)."""
        storage: Any = self._storage
        return list(storage.delayed()) if self._caps.scheduling else []

    async def _wait_for_element(self, has_element: Callable[[], bool]) -> None:
        """Wait until an element is ready (or, on a local backend, the earliest due time
        of a delayed one has come: the caller pops again, which makes it ready)."""
        storage: Any = self._storage
        local = self._caps.scheduling and hasattr(storage, "now_ms")  # else the leader's
        due = storage.next_due() if local else None
        if due is None:
            await wait_until(has_element, context=self.ctx)
            return
        wait = (due - storage.now_ms()) / 1000
        if wait <= 0:
            return
        try:
            await wait_until(has_element, context=self.ctx, timeout=wait)
        except TimeoutError:
            return
