"""What a work-queue cell declared with limits adds: the limits' figures, the readers
``bytes`` and ``dropped`` (:class:`WorkQuota`), the typed refusal naming the cell, and
the wait for room of ``push(..., wait=True)``.

The readers are invalidated by the transitions' masks (bits
:data:`~lazily_queue.core.limited_work.HELD_BYTES` and
:data:`~lazily_queue.core.limited_work.DROPPED`), the local ones and those a replicated
work queue reports, so every member's readers follow every change.

The work queue is its storage's ``limited_work()`` (the local core, or the locally
applied one on a replicated backend). The wait is on the cell's ``pending_len`` and
``in_flight_len`` readers (room comes back when an item is acked, dead-lettered or
dropped): it re-checks when they change, never by polling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.limited_work import LimitedWorkQueue
from ..core.limits import Limits, value_size
from ..errors import LimitExceeded
from ..reactive import Context, Slot, SlotGroup, wait_until

WorkSource = Callable[[], "LimitedWorkQueue | None"]


def limited_work_of(storage: Any) -> WorkSource:
    """The storage's ``limited_work`` (``None`` for a work queue without limits)."""
    find = getattr(storage, "limited_work", None)
    return find if callable(find) else (lambda: None)


def named(exc: LimitExceeded, name: str) -> LimitExceeded:
    """``exc`` naming the cell ``name``."""
    text = str(exc).replace("work queue is full", f"work queue {name!r} is full", 1)
    return LimitExceeded(text, cell=name, limit=exc.limit, value=exc.value)


async def wait_for_room(storage: Any, limits: Limits, value: Any, readers: list[Slot[int]],
                        check: Callable[[], None], context: Context) -> None:
    """Return once a push of ``value`` fits ``storage``'s work queue as applied here
    (``LimitExceeded`` at once for a value larger than ``max_bytes``)."""
    stored = storage.codec.encode(value) if hasattr(storage, "codec") else value
    size = value_size(stored)
    if limits.max_bytes is not None and size > limits.max_bytes:
        raise LimitExceeded(f"an item of {size} bytes never fits the max_bytes limit of "
                            f"{limits.max_bytes}", cell="work_queue", limit="max_bytes",
                            value=limits.max_bytes)
    work = limited_work_of(storage)

    def room() -> bool:
        check()
        for reader in readers:
            reader()
        core = work()
        over = None if core is None else core.room_for(size)
        return over is None or over[1] >= 0

    await wait_until(room, context=context)


class WorkLimits:
    """The figures of a work-queue cell's limits (mixed into the cell)."""

    _storage: Any

    def limits(self) -> Limits | None:
        """The limits the work queue was declared with (``None``: unbounded)."""
        core = limited_work_of(self._storage)()
        if core is not None:
            return core.limits
        declared = getattr(self._storage, "limits", None)
        return declared if isinstance(declared, Limits) else None

    def dropped(self) -> int:
        """Pending items ``drop_oldest`` dropped."""
        core = limited_work_of(self._storage)()
        return 0 if core is None else core.dropped_total()

    def held_bytes(self) -> int:
        """The bytes of the items held (pending and in flight; 0 without limits)."""
        core = limited_work_of(self._storage)()
        return 0 if core is None else core.held_bytes


class WorkQuota:
    """The ``bytes`` and ``dropped`` readers of a work-queue cell with limits."""

    __slots__ = ("bytes", "dropped")

    def __init__(self, name: str, cell: WorkLimits, group: SlotGroup) -> None:
        #: The bytes of the items held, pending (delayed included) and in flight.
        self.bytes: Slot[int] = group.slot(cell.held_bytes, f"{name}.bytes")
        #: The items ``drop_oldest`` dropped.
        self.dropped: Slot[int] = group.slot(cell.dropped, f"{name}.dropped")

    @classmethod
    def of(cls, name: str, cell: WorkLimits, group: SlotGroup) -> WorkQuota | None:
        """The readers of ``cell`` (created in ``group`` after its others), or ``None``
        when it has no limits."""
        return None if cell.limits() is None else cls(name, cell, group)

    def readers(self) -> dict[str, Slot[int]]:
        return {"bytes": self.bytes, "dropped": self.dropped}
