"""Slots: memoized readers with no graph dependencies, invalidated explicitly, and the
groups that clear many of them with one mask."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .context import Context, resolve_context
from .nodes import Consumer, Producer, foreign_read, running

T = TypeVar("T")


class Slot(Producer, Generic[T]):
    """A memoized reader with no graph dependencies; invalidated explicitly.

    The body reads external state untracked. :meth:`invalidate` is structural: it always
    reruns dependents, whether or not the recomputed value differs. With no observers
    it only marks the slot stale (O(1)); the value is derived on the next read. Slots
    made by a :class:`SlotGroup` share one stale mask while none of them is observed.
    """

    __slots__ = ("__weakref__", "_bit", "_fn", "_group", "_valid", "_value")

    def __init__(
        self,
        fn: Callable[[], T],
        *,
        context: Context | None = None,
        name: str = "",
        _group: SlotGroup | None = None,
        _bit: int = 0,
    ) -> None:
        super().__init__(context, name)
        self._fn = fn
        self._valid = False
        self._value: T | None = None
        self._group = _group
        self._bit = _bit

    def __repr__(self) -> str:
        return f"Slot({self.name or hex(id(self))})"

    def get(self) -> T:
        group = self._group
        if group is not None and group._stale & self._bit:
            group._sync()
        observer = self.ctx._observer
        if observer is not None:
            observer._record(self)
        elif running:
            foreign_read(self)
        if not self._valid:
            ctx = self.ctx
            saved, ctx._observer = ctx._observer, None
            try:
                self._value = self._fn()
            finally:
                ctx._observer = saved
            self._valid = True
        return self._value  # type: ignore[return-value]

    __call__ = get

    @property
    def version(self) -> int:
        self._refresh()
        return self._version

    @property
    def is_stale(self) -> bool:
        """True when the next read recomputes."""
        self._refresh()
        return not self._valid

    def _refresh(self) -> None:
        group = self._group
        if group is not None and group._stale & self._bit:
            group._sync()

    def _add_observer(self, consumer: Consumer) -> None:
        if not self._observers and self._group is not None:
            self._group._sync()
            self._group._hot += 1
        self._observers[consumer] = None

    def _remove_observer(self, consumer: Consumer) -> None:
        if self._observers.pop(consumer, 0) is None and not self._observers:
            if self._group is not None:
                self._group._hot -= 1

    def invalidate(self) -> None:
        self._valid = False
        self._changed()


class SlotGroup:
    """The reader kinds of one cell: slots addressed by bit, invalidated by mask.

    While no slot of the group is observed, :meth:`invalidate` only ORs the mask into
    a shared stale set and, when a bit newly goes stale, bumps the context's write
    epoch; the slots' versions catch up on their next read. With an observer it clears
    each named slot in one batch.
    """

    __slots__ = ("_hot", "_slots", "_stale", "ctx")

    def __init__(self, context: Context | None = None) -> None:
        self.ctx = resolve_context(context)
        self._slots: list[Slot[Any]] = []
        self._stale = 0
        self._hot = 0

    def slot(self, fn: Callable[[], T], name: str = "") -> Slot[T]:
        """A new slot of this group; its bit is ``1 << index``."""
        bit = 1 << len(self._slots)
        s: Slot[T] = Slot(fn, context=self.ctx, name=name, _group=self, _bit=bit)
        self._slots.append(s)
        return s

    def all_bits(self) -> int:
        """The mask naming every slot of the group."""
        return (1 << len(self._slots)) - 1

    @property
    def observed(self) -> bool:
        return self._hot > 0

    def _sync(self) -> None:
        stale, self._stale = self._stale, 0
        index = 0
        while stale:
            if stale & 1:
                s = self._slots[index]
                s._valid = False
                s._version += 1
            stale >>= 1
            index += 1

    def invalidate(self, mask: int) -> None:
        """Clear every slot whose bit is in ``mask``, as one atomic transition."""
        if not self._hot:
            # Bits already stale need no new epoch: no reader of theirs has validated
            # since they went stale (a read syncs the whole stale set).
            if mask & ~self._stale:
                self._stale |= mask
                self.ctx._write_epoch += 1
            return
        if self._stale:
            self._sync()
        ctx = self.ctx
        ctx._batch_depth += 1
        try:
            slots = self._slots
            index = 0
            while mask:
                if mask & 1:
                    slots[index].invalidate()
                mask >>= 1
                index += 1
        finally:
            ctx._exit_batch()
