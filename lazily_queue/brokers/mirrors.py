"""The read side broker queues and work queues share: counts mirrored from the broker,
read synchronously by the cells' readers, reported to the cell's listener."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.limits import Limits
from ..core.queue import PUSH, RESET, QueuePopError
from ..core.work import DeadLetter, DeadLetterReason, Delivery, PendingItem, change_mask
from ..core.work import WorkTransition as WT
from ..core.work_masks import ALL_WORK_READERS
from ..storage.queue import QueueChangeListener
from ..storage.work import WorkQueueChangeListener
from .mirror import MirroredObject, queue_transitions

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
    """A broker queue's mirrored length, closed flag and capacity.

    A refresh's read and this process's own operations answer in any order (several
    round trips are in flight at once), so each state carries the broker's version: a
    push a read already counts is not counted again, a read that missed a push counted
    meanwhile keeps it, and a read older than an empty queue a pop found meanwhile is
    dropped. The readers then report only changes the broker made."""

    #: The ``Limits(max_length=n)`` the queue was opened with (its capacity ``n``), which
    #: the cell reports as ``limits()``; ``None`` when opened with ``capacity``.
    declared_limits: Limits | None = None
    _listener: QueueChangeListener | None
    _len: int
    _head_id: object
    _closed: bool
    _capacity: int | None
    _items: list[Any]
    #: The broker's version of the state the mirror shows: a state read at a version at
    #: least a push's includes that push (Redis: the queue's change counter; NATS: the
    #: stream's last sequence). -1 before the first read.
    _version = -1
    #: While a read is in flight: the pushes of this process counted meanwhile, each
    #: ``(version, head identity, view entry)``; ``None`` between reads.
    _unread: list[tuple[int, object, Any]] | None = None
    #: A state observed by an operation (a pop that found the queue empty) replaced the
    #: mirror while the read in flight ran: that read counts only if it is newer.
    _overtaken = False

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

    def _show(self, new: tuple[int, object, bool], items: list[Any]) -> None:
        """Make ``new`` (``(len, head identity, closed)``) the mirror and report what
        changed."""
        old = (self._len, self._head_id, self._closed)
        self._len, self._head_id, self._closed = new
        self._items = items
        listener = self._listener
        if listener is not None:
            for op, pre in queue_transitions(old, new, self._capacity):
                listener(op, pre)

    def _count_push(self, version: int, head: object, entry: Any) -> None:
        """A push of this process (the broker's ``version`` after it, the ``head``
        identity and view ``entry`` it has when it is the first element) counts at once,
        so a pop waiting in this process wakes without waiting for the refresh, unless
        the mirror shows a state read after it, which counts it already. The refresh it
        asks for confirms the length."""
        if version > self._version:
            length = self._len
            self._len += 1
            if self._unread is not None:
                self._unread.append((version, head, entry))
            if length == 0:
                self._items = [entry]
                self._head_id = head
            if self._listener is not None:
                self._listener(PUSH, length)
        self._changed()

    def _reading(self) -> None:
        """A read of the broker's state is about to be sent (see :meth:`_read_state`)."""
        self._unread = []
        self._overtaken = False

    def _read_failed(self) -> None:
        self._unread = None

    def _read_state(
        self, version: int, state: tuple[int, object, bool], items: list[Any]
    ) -> None:
        """Install a state read at ``version``. The replies of a read and of this
        process's pushes arrive in any order: the pushes counted while the read was in
        flight that it does not include (a higher version) stay counted on top of it,
        and a read older than a state an operation observed meanwhile is dropped."""
        unread, self._unread = self._unread or [], None
        if self._overtaken and version < self._version:
            return
        length, head, closed = state
        later = [push for push in unread if push[0] > version]
        if later and length == 0:
            head, items = later[0][1], [later[0][2]]
        self._version = version
        self._show((length + len(later), head, closed), items)

    def _observed_empty(self, version: int) -> None:
        """An operation of this process found the queue empty and open at ``version``
        (no push of this process was counted meanwhile): the mirror says so at once,
        unless it shows a state read after that."""
        if version <= self._version:
            return
        self._version = version
        if self._unread is not None:
            self._unread = []
            self._overtaken = True
        self._show((0, self._head_id, self._closed), [])

    if TYPE_CHECKING:  # each broker queue implements it

        async def poll_many(
            self, n: int, *, timeout: float | None = None
        ) -> list[T] | QueuePopError: ...

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        result = await self.poll_many(1, timeout=timeout)
        return result if isinstance(result, QueuePopError) else result[0]


class WorkMirror(MirroredObject):
    """A broker work queue's mirrored counts (pending, in flight, dead), views and dead
    letters.

    As for a queue (:class:`QueueMirror`), the broker's version orders a refresh's read
    and this process's pushes: a push a read already counts is not counted again, and
    one counted while a read was in flight that it lacks stays counted on top of it."""

    visibility_timeout: float
    max_deliveries: int
    _listener: WorkQueueChangeListener | None
    _counts: tuple[int, int, int]
    _pending: list[PendingItem]
    _dead: list[DeadLetter]
    #: The broker's version of the counts shown (Redis: the stream's last entry id;
    #: NATS: the stream's last sequence the consumer sees); -1 before the first read.
    _version = -1
    #: While a read is in flight: the versions of the pushes counted meanwhile.
    _unread: list[int] | None = None
    #: The newest version a read or a push of this process showed (see :meth:`_newest`).
    _seen = -1

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

    def pending(self) -> list[PendingItem]:
        """Up to ``view_limit`` pending items, as the last refresh read them (which ones:
        see each backend)."""
        return list(self._pending)

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        grouped: dict[str, list[Delivery]] = {}
        for delivery in self.in_flight():
            grouped.setdefault(delivery.worker, []).append(delivery)
        return grouped

    def snapshot(self) -> dict[str, Any]:
        """The mirror as plain data (views bounded by ``view_limit``)."""
        return {
            "visibility_timeout": self.visibility_timeout,
            "max_deliveries": self.max_deliveries,
            "pending": [item.to_dict() for item in self._pending],
            "in_flight": [d.to_dict() for d in self.in_flight()],
            "dead_letters": [letter.to_dict() for letter in self._dead],
        }

    def _report_all(self) -> None:
        if self._listener is not None:
            self._listener(ALL_WORK_READERS)

    def _pushed(self, version: int) -> None:
        """An item this process pushed (the broker's ``version`` after it) counts as
        pending at once (a claim waiting in this process wakes without waiting for the
        refresh, which then confirms the count), unless the mirror shows counts read
        after it, which count it already."""
        self._seen = max(self._seen, version)
        if version > self._version:
            old = self._counts
            self._counts = (old[0] + 1, old[1], old[2])
            if self._unread is not None:
                self._unread.append(version)
            if self._listener is not None:
                self._listener(change_mask(old, self._counts))
        self._changed()

    def _reading(self) -> None:
        """A read of the broker's counts is about to be sent."""
        self._unread = []

    def _read_failed(self) -> None:
        self._unread = None

    def _unread_pushes(self, version: int) -> int:
        """The read (at ``version``) landed: how many pushes counted while it was in
        flight it lacks (they stay counted on top of its pending count)."""
        unread, self._unread = self._unread or [], None
        self._version = version
        self._seen = max(self._seen, version)
        return sum(1 for pushed in unread if pushed > version)

    def _newest(self) -> int:
        """The version an answer to a request sent now comes after. An operation that
        found no item ready may show that (an empty queue) only while this is still
        the newest version seen: a read or push that landed meanwhile may count an item
        it did not see."""
        return self._seen

    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        self._listener = listener

    if TYPE_CHECKING:  # each broker work queue implements them

        def in_flight(self) -> list[Delivery]: ...

        async def poll_many(
            self, worker: str, n: int, now: float | None, *, timeout: float | None = None
        ) -> WT[list[Delivery]]: ...

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WT[Delivery | None]:
        leased = await self.poll_many(worker, 1, now, timeout=timeout)
        return WT(leased.result[0] if leased.result else None, 0)
