"""The read side broker queues and work queues share: counts mirrored from the broker,
read synchronously by the cells' readers, reported to the cell's listener."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.limits import Limits
from ..core.queue import RESET, QueuePopError
from ..core.work import DeadLetter, DeadLetterReason, Delivery, change_mask
from ..core.work import WorkTransition as WT
from ..core.work_masks import ALL_WORK_READERS
from ..storage.queue import QueueChangeListener
from ..storage.work import WorkQueueChangeListener
from .mirror import MirroredObject

T = TypeVar("T")


def whole(raw: object, least: int) -> int | None:
    """``raw`` (bytes, str or int another program may have written) as an int >= ``least``,
    or ``None`` when it is not one."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    if isinstance(text, int) and not isinstance(text, bool):
        return text if text >= least else None
    if isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 20:
        return int(text) if int(text) >= least else None
    return None


def foreign_letter(item: int | None, value: Any, attempts: object, reason: object,
                   fallback: int) -> DeadLetter:
    """A dead letter read from the broker, whose fields another program may have written:
    an item id it lacks is ``fallback`` (the record's own id), attempts that are not a
    count are 1, an unknown reason is ``nack``; the value is kept as decoded."""
    text = reason.decode(errors="replace") if isinstance(reason, bytes) else reason
    known = text if text in ("nack", "expired") else "nack"
    return DeadLetter(fallback if item is None else item, value,
                      whole(attempts, 1) or 1, DeadLetterReason(known))


class QueueMirror(MirroredObject, Generic[T]):
    """A broker queue's mirrored length, closed flag and capacity."""

    #: The ``Limits(max_length=n)`` the queue was opened with (its capacity ``n``), which
    #: the cell reports as ``limits()``; ``None`` when opened with ``capacity``.
    declared_limits: Limits | None = None
    _listener: QueueChangeListener | None
    _len: int
    _closed: bool
    _capacity: int | None

    def len(self) -> int:
        return self._len

    def is_closed(self) -> bool:
        return self._closed

    def capacity(self) -> int | None:
        return self._capacity

    def _report_all(self) -> None:
        if self._listener is not None:
            self._listener(RESET, self._len)

    def set_change_listener(self, listener: QueueChangeListener | None) -> None:
        self._listener = listener

    if TYPE_CHECKING:  # each broker queue implements it

        async def poll_many(
            self, n: int, *, timeout: float | None = None
        ) -> list[T] | QueuePopError: ...

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        result = await self.poll_many(1, timeout=timeout)
        return result if isinstance(result, QueuePopError) else result[0]


class WorkMirror(MirroredObject):
    """A broker work queue's mirrored counts (pending, in flight, dead) and dead letters."""

    _listener: WorkQueueChangeListener | None
    _counts: tuple[int, int, int]
    _dead: list[DeadLetter]

    def pending_len(self) -> int:
        return self._counts[0]

    def is_empty(self) -> bool:
        return self._counts[0] == 0

    def in_flight_len(self) -> int:
        return self._counts[1]

    def dead_letter_len(self) -> int:
        return self._counts[2]

    def dead_letters(self) -> list[DeadLetter]:
        return list(self._dead)

    def _report_all(self) -> None:
        if self._listener is not None:
            self._listener(ALL_WORK_READERS)

    def _pushed(self) -> None:
        """An item this process pushed counts as pending at once (a claim waiting in this
        process wakes without waiting for the refresh, which then confirms the count)."""
        old = self._counts
        self._counts = (old[0] + 1, old[1], old[2])
        if self._listener is not None:
            self._listener(change_mask(old, self._counts))
        self._changed()

    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        self._listener = listener

    if TYPE_CHECKING:  # each broker work queue implements it

        async def poll_many(
            self, worker: str, n: int, now: float | None, *, timeout: float | None = None
        ) -> WT[list[Delivery]]: ...

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WT[Delivery | None]:
        leased = await self.poll_many(worker, 1, now, timeout=timeout)
        return WT(leased.result[0] if leased.result else None, 0)
