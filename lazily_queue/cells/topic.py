"""TopicCell: the reactive broadcast shell over any topic storage.

There is one reader per subscriber, minted on demand by :meth:`TopicCell.reader` (also
for ids not subscribed yet) and cached. Its value is the subscriber's unread suffix, or
``None`` while the subscriber is unknown or offline, which is distinct from ``[]``.
When the readers grow past twice their number at the last look, those of ids the topic
no longer knows are held weakly (kept while in use), so subscribers that come and go do
not stay for the cell's lifetime.
Invalidation is structural: each successful operation clears exactly the readers its
transition names, in one batch, whether or not their values differ.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from ..core.limited_topic import LimitedTopic
from ..core.limits import Limits
from ..core.topic import (
    Start,
    TopicTransition,
    check_subscriber,
)
from ..errors import LimitExceeded, UnsupportedOperation
from ..reactive import Context, Slot
from ..serializers import Codec, Serializer
from ..storage.capabilities import StorageCapabilities, stop_check, unreachable_check
from ..storage.local_topic import LocalTopicStorage
from ..storage.serializing import SerializingTopicStorage
from ..storage.topic import (
    SyncTopicStorage,
    TopicStorage,
    as_observable_topic,
    as_sync_topic,
    topic_capabilities,
)
from ..threads import LoopBridge, ThreadSafeCell
from .deadline import Deadline
from .expiry import expired_reader
from .group import GroupCell, open_group, restore_local_topic
from .topic_publish import TopicPublishes
from .topic_replay import TopicReplay
from .topic_stream import TopicStreams
from .topic_subscribers import TopicSubscribers
from .work_batches import Clock

T = TypeVar("T")
R = TypeVar("R")

#: Readers a topic cell holds before it first looks for those of ids it no longer knows.
_FIRST_SWEEP = 64


class TopicCell(TopicPublishes[T], TopicReplay[T], TopicStreams[T], TopicSubscribers[T]):
    """A broadcast log with per-subscriber cursors, bound to one reactive context.

    On every backend: ``await subscribe / reconnect / disconnect / publish / gc``
    (and ``delete_subscriber`` where the backend declares ``subscriber_delete``),
    ``await advance(id)`` (waits for an element and consumes it), its non-waiting twin
    ``await poll(id)`` (the element, or ``None``), :meth:`stream`, the reads and the
    readers. On a backend that declares ``sync`` (the local core), the synchronous
    ``try_subscribe``, ``try_reconnect``, ``try_disconnect``, ``try_publish``,
    ``try_advance`` and ``try_gc`` too; elsewhere they raise
    :class:`~lazily_queue.errors.UnsupportedOperation` naming the awaitable to use.
    ``serializer`` (see :mod:`lazily_queue.serializers`) encodes what is published and
    decodes what is read; ``clock`` (seconds, as ``time.time``) stamps the enqueue time
    of what the local core publishes. An element's offset is its message id:
    :meth:`stream_messages` yields :class:`~.message.Message` objects.
    """

    def __init__(
        self,
        storage: TopicStorage[T] | None = None,
        *,
        context: Context | None = None,
        name: str = "topic",
        serializer: Serializer[T] | None = None,
        clock: Callable[[], float] | None = None,
        ttl: float | None = None,
        max_age: float | None = None,
        limits: Limits | None = None,
    ) -> None:
        if storage is None and (ttl is not None or max_age is not None):
            from ..storage.local_topic_expiry import ExpiringTopicStorage
            storage = ExpiringTopicStorage(ttl=ttl, max_age=max_age, clock=clock or time.time,
                                           limits=limits)
        elif storage is None:
            storage = LocalTopicStorage(None if limits is None else LimitedTopic(limits),
                                        clock=clock)
        elif limits is not None or ttl is not None or max_age is not None:
            raise ValueError("pass limits, ttl and max_age to the storage backend, not to "
                             "TopicCell")
        elif clock is not None:
            raise ValueError("pass clock to the storage backend, not to TopicCell")
        if serializer is not None:
            storage = SerializingTopicStorage(storage, Codec(serializer, name))
        self.serializer = serializer
        self._caps = topic_capabilities(storage)
        self.name = name
        self._take_context(context)
        self._storage = storage
        self._raise_if_stopped = stop_check(storage)
        self._unreachable = unreachable_check(storage)
        self._readers: dict[str, Slot[list[T] | None]] = {}
        #: Readers of ids the topic did not know at the last sweep, while in use.
        self._unknown: weakref.WeakValueDictionary[str, Slot[list[T] | None]] = (
            weakref.WeakValueDictionary())
        self._sweep_at = _FIRST_SWEEP
        self._group_cells: dict[str, GroupCell] = {}
        #: Elements that left by the age limit (capability ``expiry``).
        self.expired: Slot[int] = Slot(expired_reader(storage), context=self.ctx,
                                       name=f"{name}.expired")
        self._init_limits(self.ctx)
        if self._caps.expiry:
            cast(Any, storage).set_expired_listener(self._on_expired)
        self._sync: SyncTopicStorage[T] | None = as_sync_topic(storage)
        #: The local expiring backend's skip of expired elements before a take.
        self._skip: Callable[[str], TopicTransition[int]] | None = getattr(
            storage, "try_skip_expired", None) if self._sync is not None else None
        observable = as_observable_topic(storage)
        self._observed = observable is not None
        if observable is not None:
            observable.set_change_listener(self._invalidate)

    @classmethod
    def from_snapshot(
        cls, snapshot: Mapping[str, Any], *, context: Context | None = None, name: str = "topic",
        clock: Callable[[], float] | None = None,
    ) -> TopicCell[T]:
        """A local topic restored from :meth:`snapshot` output (validated), its consumer
        groups included; ``clock`` stamps what it publishes from then on."""
        return cls(restore_local_topic(snapshot, name, clock), context=context, name=name)

    def group(
        self, group: str, *, visibility_timeout: float | None = None,
        max_deliveries: int | None = None, start: Start = "tail", clock: Clock | None = None,
    ) -> GroupCell:
        """The consumer group ``group`` of this topic (capability ``groups``): a durable
        work queue this topic feeds with every element published from ``start`` on
        (``"tail"``, ``"head"`` or an offset, the first time it is opened). Its members
        claim, ack and nack as a :class:`~lazily_queue.cells.work_queue.WorkQueueCell`'s
        workers do; each element goes to one member at a time, every group gets every
        element. ``visibility_timeout`` (seconds; default 30) and ``max_deliveries``
        (default 3) must match wherever the group is opened. Opening it again returns the
        same cell. See :mod:`lazily_queue.cells.group`."""
        return open_group(self, self._group_cells, group, visibility_timeout=visibility_timeout,
                          max_deliveries=max_deliveries, start=start, clock=clock,
                          opening=self._at_home)

    def __repr__(self) -> str:
        return f"TopicCell({self.name!r}, storage={self._storage!r})"

    @property
    def storage(self) -> TopicStorage[T]:
        return self._storage

    @property
    def capabilities(self) -> StorageCapabilities:
        """What the backend declares beyond the awaitable operations (``sync``, ...)."""
        return self._caps

    # -- readers and invalidation ---------------------------------------------------------

    def reader(self, subscriber: str) -> Slot[list[T] | None]:
        """The subscriber's reader: its unread suffix, or ``None`` while unavailable.

        Readers are minted on first use (also for ids not subscribed yet) and kept (one
        of an id the topic no longer knows while in use), so every caller of one id
        shares one reader.
        """
        slot = self._readers.get(subscriber)
        if slot is None:
            slot = self._unknown.pop(subscriber, None)
            if slot is None:
                check_subscriber(subscriber)
                storage = self._storage
                slot = Slot(
                    lambda: storage.read_stream(subscriber),
                    context=self.ctx,
                    name=f"{self.name}.reader[{subscriber}]",
                )
            self._readers[subscriber] = slot
            if len(self._readers) >= self._sweep_at:
                self._sweep()
        return slot

    def _sweep(self) -> None:
        """Hold the readers of ids the topic does not know weakly."""
        readers, cursor = self._readers, self._storage.cursor
        for subscriber in [s for s in readers if cursor(s) is None]:
            self._unknown[subscriber] = readers.pop(subscriber)
        self._sweep_at = max(_FIRST_SWEEP, 2 * len(readers))

    def _on_expired(self) -> None:
        self.expired.invalidate()
        self._refresh_limits()

    def _invalidate(self, subscribers: frozenset[str]) -> None:
        if self._quota_seen is not None:
            self._refresh_limits()
        readers = self._readers
        if len(readers) < len(subscribers):
            hit = [slot for s, slot in readers.items() if s in subscribers]
        else:
            hit = [readers[s] for s in subscribers if s in readers]
        if self._unknown:
            hit += [slot for s in subscribers if (slot := self._unknown.get(s)) is not None]
        if len(hit) == 1:
            hit[0].invalidate()
        elif hit:
            with self.ctx.batch():
                for slot in hit:
                    slot.invalidate()

    def _apply(self, transition: TopicTransition[R]) -> R:
        if not self._observed:
            if transition.invalidated:
                self._invalidate(transition.invalidated)
            elif self._quota_seen is not None:
                self._refresh_limits()
        return transition.result

    def _require_sync(self, method: str, awaitable: str) -> SyncTopicStorage[T]:
        """The synchronous backend for ``method``, in this thread (:mod:`.loop_owner`)."""
        if self._sync is None:
            raise UnsupportedOperation(
                f"{self.name}: {method} needs a synchronous backend and "
                f"{type(self._storage).__name__} is not one; use "
                f"`await {self.name}.{awaitable}` instead"
            )
        if self._checks_thread:
            self._at_home(method)
        return self._sync

    # -- synchronous core (capability ``sync``) -------------------------------------------

    def try_publish(self, value: T) -> int:
        """Append ``value`` for every subscriber; returns its offset."""
        storage = self._require_sync("try_publish", "publish(value)")
        try:
            return self._apply(storage.try_publish(value))
        except LimitExceeded as exc:  # the retention's limits: name this cell
            raise self._named(exc) from None

    def try_advance(self, subscriber: str) -> T | None:
        """Consume and return the element at the cursor; ``None`` when there is none."""
        storage = self._require_sync("try_advance", "poll(subscriber)")
        return self._apply(storage.try_advance(subscriber))

    def try_gc(self) -> int:
        """Drop what no durable cursor still needs; returns the number removed."""
        storage = self._require_sync("try_gc", "gc()")
        return self._apply(storage.try_gc())

    # -- reads ------------------------------------------------------------------------------

    def read(self, subscriber: str) -> T | None:
        """The element at the cursor, untracked; ``None`` when unavailable or at the tail."""
        return self._storage.read(subscriber)

    def read_stream(self, subscriber: str) -> list[T] | None:
        """The unread suffix, untracked; ``None`` for an unknown or offline subscriber."""
        return self._storage.read_stream(subscriber)

    def base_offset(self) -> int:
        return self._storage.base_offset()

    def end_offset(self) -> int:
        return self._storage.end_offset()

    def elements(self) -> list[T]:
        """The retained log, oldest first."""
        return self._storage.elements()

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        """Every subscription as ``{id: {durability, connected, cursor}}``."""
        return self._storage.subscriptions()

    def snapshot(self) -> dict[str, Any]:
        """Base, retained elements and every record (the ``initial`` shape of fixtures)."""
        return self._storage.snapshot()

    def threadsafe(self, loop: asyncio.AbstractEventLoop | None = None) -> ThreadSafeCell:
        """A blocking proxy for other threads (see :mod:`lazily_queue.threads`)."""
        return ThreadSafeCell(self, LoopBridge(loop))

    # -- awaitable surface (every backend) ------------------------------------------------

    async def poll(self, subscriber: str) -> T | None:
        """Consume the element at the cursor without waiting; ``None`` when there is none."""
        self._own()
        if self._sync is not None:
            return self.try_advance(subscriber)
        return self._apply(await self._storage.poll(subscriber))

    async def advance(self, subscriber: str, *, timeout: float | None = None) -> T:
        """Wait until the subscriber has an unread element, then consume and return it.

        Waits through the subscriber's reader while it is offline or caught up (it never
        subscribes): an id the topic does not know raises :class:`UnknownSubscriber` at
        once, and so does the wait when the id is dropped meanwhile. ``timeout`` bounds
        the wait (:mod:`.deadline`: ``timeout=0`` takes an unread element and raises
        ``TimeoutError`` when there is none). Locally, cancellation never consumes an
        element. Use one consumer per subscriber id (as
        with :meth:`stream`): over a backend without ``sync``, another consumer of the
        same id can take the element between the wait and the commit, and this then
        returns ``None``.
        """
        self._own()
        reader = self.reader(subscriber)
        deadline = Deadline(timeout)
        await self._known(subscriber)
        while True:
            self._raise_if_stopped()
            if not reader():
                async with deadline.waiting(
                        f"advance of {subscriber!r} on topic {self.name!r}: no unread element",
                        self._unreachable):
                    await self._wait_unread(reader, subscriber)
            if self._sync is None:
                value = await self.poll(subscriber)
                if value is None and self._only_skipped(subscriber):
                    continue  # every unread element had expired: wait for the next
                return cast(T, value)
            if self._skip is not None:
                self._apply(self._skip(subscriber))
            if self._storage.read_stream(subscriber):
                return cast(T, self.try_advance(subscriber))

    def _only_skipped(self, subscriber: str) -> bool:
        """Whether a take that returned ``None`` moved the cursor past expired elements
        only (the element before the cursor is expired here), rather than handing out a
        ``None`` value."""
        expired = getattr(self._storage, "expired_offsets", None)
        cursor = self._storage.cursor(subscriber)
        if expired is None or not cursor:
            return False
        return cursor - 1 in expired(cursor - 1, cursor)

    async def gc(self) -> int:
        """Drop what no durable cursor still needs; returns the number removed."""
        self._own()
        if self._sync is not None:
            return self.try_gc()
        return self._apply(await self._storage.gc())
