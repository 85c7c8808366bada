"""The storage seam of a QueueCell: what every FIFO backend implements.

:class:`QueueStorage` is what *every* backend implements, local or not (the in-process
deque, the Raft storage, a remote client, a broker adapter): the awaitable operations,
which never wait for room or for an element (the cell does the waiting), and the
synchronous reads the reactive readers derive from (for a backend elsewhere, a local
replica or mirror kept current by its change reports). Nothing required ever raises
for being unsupported.

The rest is declared in ``capabilities`` (:class:`StorageCapabilities`):

- ``sync``: :class:`SyncQueueStorage`, the spec's synchronous core (``try_push``,
  ``try_pop``, ``try_close`` with ``len`` and ``is_closed``);
- ``observable``: :class:`ObservableQueueStorage`, every transition reported to the
  change listener, including ones the cell did not make;
- ``peek``: :class:`PeekableQueueStorage`, the ``head`` reader;
- ``reporting_ops``: the deque's fast path (see
  :meth:`~lazily_queue.core.fifo.Fifo.reporting_ops`);
- ``lifecycle``: ``raise_if_stopped()``, for a backend that can stop (a node);
- ``dedup``: :class:`DedupQueueStorage`, pushes given a producer ``msg_id``;
- ``messages``: :class:`MessageQueueStorage`, pops and give-backs that carry message ids
  and enqueue stamps;
- ``headers``: :class:`HeaderQueueStorage`, elements pushed with headers (through
  ``offer_options``), which pops and give-backs carry along;
- ``expiry``: ``expired_count()``, elements pushed with a TTL (through ``offer_options``)
  expire undelivered;
- ``limits``: ``limits()`` and ``limited_fifo()``, a queue declared with limits
  (:mod:`lazily_queue.cells.queue_limits`);
- ``scheduling``: ``offer_options(value, options)``, one push with its options combined
  (:class:`~lazily_queue.core.push_options.PushOptions`, a delivery time included), and
  the delayed elements' ``delayed_len()``, ``next_due()`` and ``delayed()``
  (:mod:`lazily_queue.cells.queue_options`).

A backend without ``sync`` must be ``observable``: its operations complete elsewhere,
so only its reports can tell the cell which readers changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from ..core.fifo import FifoOps, Report
from ..core.ids import Run
from ..core.queue import QueuePopError, QueuePushError
from .capabilities import StorageCapabilities, declared

T = TypeVar("T")

QueueChangeListener = Callable[[int, int], None]
"""``listener(op, pre_len)``: ``op`` is ``PUSH``, ``POP``, ``UNPOP``, ``RESET`` or a
first ``CLOSE`` (:mod:`lazily_queue.core.queue`)."""


class QueueStorage(Protocol[T]):
    """A FIFO backend. Errors leave the state unchanged."""

    @property
    def capabilities(self) -> StorageCapabilities: ...

    def len(self) -> int: ...

    def is_closed(self) -> bool: ...

    def capacity(self) -> int | None:
        """``None`` for unbounded; a bounded backend returns its bound."""
        ...

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        """Append ``value`` without waiting for room: ``None``, or ``Closed`` (checked
        first) / ``Full``."""
        ...

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        """Remove the oldest element without waiting: it, or ``Empty`` / ``Closed``."""
        ...

    async def close(self, *, timeout: float | None = None) -> None:
        """Close for pushes; idempotent and terminal. Elements still drain."""
        ...

    async def poll_many(self, n: int, *, timeout: float | None = None) -> list[T] | QueuePopError:
        """Remove up to ``n`` of the oldest elements at once, in order, without waiting:
        a non-empty list, or ``Empty`` / ``Closed`` as :meth:`poll`."""
        ...

    async def unpoll(self, values: list[T], *, timeout: float | None = None) -> None:
        """Put elements a consumer took but never handed out back at the head, in order."""
        ...


class SyncQueueStorage(QueueStorage[T], Protocol[T]):
    """Capability ``sync``: the operations complete synchronously."""

    def try_push(self, value: T) -> QueuePushError | None: ...

    def try_pop(self) -> T | QueuePopError: ...

    def try_close(self) -> None: ...


class PeekableQueueStorage(QueueStorage[T], Protocol[T]):
    """Capability ``peek``."""

    def peek(self) -> Any:
        """The oldest element, or ``EMPTY``."""
        ...


class DedupQueueStorage(QueueStorage[T], Protocol[T]):
    """Capability ``dedup``."""

    async def offer_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> QueuePushError | None:
        """:meth:`offer`, unless ``msg_id`` is in the dedup window: then ``None``
        (the first push applied) and nothing changes. A refused push is not recorded."""
        ...


class MessageQueueStorage(QueueStorage[T], Protocol[T]):
    """Capability ``messages``: ids and enqueue stamps (milliseconds; 0 unknown) travel
    with the elements as runs ``[first_id, count, stamp]`` (:mod:`lazily_queue.core.ids`)."""

    async def poll_stamped(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run]] | QueuePopError:
        """:meth:`poll_many`, with the runs of the ids and stamps of what it took."""
        ...

    async def unpoll_stamped(
        self, values: list[T], runs: list[Run], *, timeout: float | None = None
    ) -> None:
        """:meth:`unpoll` under the ids and stamps ``runs`` (from their pop)."""
        ...


class HeaderQueueStorage(MessageQueueStorage[T], Protocol[T]):
    """Capability ``headers``: elements with headers kept by message id (pushed with
    ``offer_options``, which the capability requires)."""

    async def poll_headers(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        """``poll_stamped`` and the ``[[id, headers], ...]`` of what it took."""
        ...

    async def unpoll_headers(
        self, values: list[T], runs: list[Run], headers: list[list[Any]], *,
        timeout: float | None = None,
    ) -> None:
        """``unpoll_stamped``, the elements keeping ``headers`` (``[[id, headers]]``)."""
        ...


class ObservableQueueStorage(QueueStorage[T], Protocol[T]):
    """Capability ``observable``."""

    def set_change_listener(self, listener: QueueChangeListener | None) -> None:
        """Report every successful transition, including ones the cell did not make."""
        ...


class ReportingQueueStorage(SyncQueueStorage[T], Protocol[T]):
    """Capability ``reporting_ops``."""

    def reporting_ops(self, report: Report) -> FifoOps[T]: ...


REQUIRED = ("len", "is_closed", "capacity", "offer", "poll", "close", "poll_many", "unpoll")
CAPABILITY_METHODS = {
    "sync": ("try_push", "try_pop", "try_close"),
    "observable": ("set_change_listener",),
    "peek": ("peek",),
    "reporting_ops": ("reporting_ops", "try_push", "try_pop", "try_close"),
    "lifecycle": ("raise_if_stopped", "set_change_listener"),
    "dedup": ("offer_once",),
    "expiry": ("offer_options", "expired_count"),
    "messages": ("poll_stamped", "unpoll_stamped"),
    "headers": ("offer_options", "poll_headers", "unpoll_headers"),
    "limits": ("limits", "limited_fifo"),
    "scheduling": ("offer_options", "delayed_len", "next_due", "delayed"),
}


def queue_capabilities(storage: QueueStorage[T]) -> StorageCapabilities:
    """The storage's declared capabilities, checked against its methods (``TypeError``)."""
    caps = declared(storage, "queue", REQUIRED, CAPABILITY_METHODS)
    if not (caps.sync or caps.observable):
        raise TypeError(
            f"{type(storage).__name__} declares neither 'sync' nor 'observable': a queue "
            "backend whose operations complete elsewhere must report its transitions"
        )
    return caps


def as_sync(storage: QueueStorage[T]) -> SyncQueueStorage[T] | None:
    """The storage's synchronous surface when it declares ``sync``, else ``None``."""
    return cast(SyncQueueStorage[T], storage) if storage.capabilities.sync else None


def as_dedup(storage: QueueStorage[T]) -> DedupQueueStorage[T] | None:
    return cast(DedupQueueStorage[T], storage) if storage.capabilities.dedup else None


def as_messages(storage: QueueStorage[T]) -> MessageQueueStorage[T] | None:
    return cast(MessageQueueStorage[T], storage) if storage.capabilities.messages else None


def as_headers(storage: QueueStorage[T]) -> HeaderQueueStorage[T] | None:
    return cast(HeaderQueueStorage[T], storage) if storage.capabilities.headers else None


def as_peekable(storage: QueueStorage[T]) -> PeekableQueueStorage[T] | None:
    return cast(PeekableQueueStorage[T], storage) if storage.capabilities.peek else None


def as_observable(storage: QueueStorage[T]) -> ObservableQueueStorage[T] | None:
    caps = storage.capabilities
    return cast(ObservableQueueStorage[T], storage) if caps.observable else None


def as_reporting(storage: QueueStorage[T]) -> ReportingQueueStorage[T] | None:
    caps = storage.capabilities
    return cast(ReportingQueueStorage[T], storage) if caps.reporting_ops else None
