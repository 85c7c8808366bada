"""TopicCell: the reactive broadcast shell over any topic storage.

There is one reader per subscriber, minted on demand by :meth:`TopicCell.reader` (also
for ids not subscribed yet) and cached. Its value is the subscriber's unread suffix, or
``None`` while the subscriber is unknown or offline, which is distinct from ``[]``.
Invalidation is structural: each successful operation clears exactly the readers its
transition names, in one batch, whether or not their values differ.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, Generic, TypeVar, cast

from ..core.topic import Durability, SubscribeOutcome, TopicCore, TopicTransition, check_subscriber
from ..errors import UnsupportedOperation
from ..reactive import Context, Slot, resolve_context, wait_until
from ..storage.topic import (
    ObservableTopicStorage,
    ReplicatedTopicStorage,
    TopicStorage,
    TopicView,
)
from ..threads import LoopBridge, ThreadSafeCell

T = TypeVar("T")
R = TypeVar("R")


class TopicCell(Generic[T]):
    """A broadcast log with per-subscriber cursors, bound to one reactive context.

    Core (synchronous) surface: :meth:`subscribe`, :meth:`reconnect`, :meth:`disconnect`,
    :meth:`publish`, :meth:`read`, :meth:`read_stream`, :meth:`advance` and the readers.
    The ``a``-prefixed twins also work over replicated storage; :meth:`stream` waits for
    and consumes elements.
    """

    def __init__(
        self,
        storage: TopicStorage[T] | ReplicatedTopicStorage[T] | None = None,
        *,
        context: Context | None = None,
        name: str = "topic",
    ) -> None:
        if storage is None:
            storage = TopicCore()
        if not isinstance(storage, TopicView):
            raise TypeError(f"{type(storage).__name__} is not a topic storage")
        self.name = name
        self.ctx = resolve_context(context)
        self._storage = storage
        self._readers: dict[str, Slot[list[T] | None]] = {}
        self._replicated = isinstance(storage, ReplicatedTopicStorage)
        self._observed = isinstance(storage, ObservableTopicStorage)
        if isinstance(storage, ObservableTopicStorage):
            storage.set_change_listener(self._invalidate)

    @classmethod
    def from_snapshot(
        cls, snapshot: Mapping[str, Any], *, context: Context | None = None, name: str = "topic"
    ) -> TopicCell[T]:
        """A local topic restored from :meth:`snapshot` output (validated)."""
        core: TopicCore[T] = TopicCore.from_snapshot(snapshot)
        return cls(core, context=context, name=name)

    def __repr__(self) -> str:
        return f"TopicCell({self.name!r}, storage={self._storage!r})"

    @property
    def storage(self) -> TopicStorage[T] | ReplicatedTopicStorage[T]:
        return self._storage

    # -- readers and invalidation ---------------------------------------------------------

    def reader(self, subscriber: str) -> Slot[list[T] | None]:
        """The subscriber's reader: its unread suffix, or ``None`` while unavailable.

        Readers are minted on first use (also for ids not subscribed yet) and kept for
        the cell's lifetime, so every caller of one id shares one reader.
        """
        slot = self._readers.get(subscriber)
        if slot is None:
            check_subscriber(subscriber)
            storage = self._storage
            slot = Slot(
                lambda: storage.read_stream(subscriber),
                context=self.ctx,
                name=f"{self.name}.reader[{subscriber}]",
            )
            self._readers[subscriber] = slot
        return slot

    def _invalidate(self, subscribers: frozenset[str]) -> None:
        readers = self._readers
        if len(readers) < len(subscribers):
            hit = [slot for s, slot in readers.items() if s in subscribers]
        else:
            hit = [readers[s] for s in subscribers if s in readers]
        if len(hit) == 1:
            hit[0].invalidate()
        elif hit:
            with self.ctx.batch():
                for slot in hit:
                    slot.invalidate()

    def _apply(self, transition: TopicTransition[R]) -> R:
        if not self._observed and transition.invalidated:
            self._invalidate(transition.invalidated)
        return transition.result

    def _sync(self, twin: str) -> TopicStorage[T]:
        if self._replicated:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} is replicated; "
                f"use 'await {twin}(...)' instead"
            )
        return self._storage  # type: ignore[return-value]

    # -- core surface ---------------------------------------------------------------------

    def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE
    ) -> SubscribeOutcome:
        """Subscribe at the tail; an offline durable id reconnects at its cursor."""
        return self._apply(self._sync("asubscribe").subscribe(subscriber, durability))

    def reconnect(self, subscriber: str) -> bool:
        """Bring an offline durable subscriber back; ``False`` when nothing changed."""
        return self._apply(self._sync("areconnect").reconnect(subscriber))

    def disconnect(self, subscriber: str) -> bool:
        """Durable: go offline keeping the cursor. Ephemeral: forget the subscription."""
        return self._apply(self._sync("adisconnect").disconnect(subscriber))

    def publish(self, value: T) -> int:
        """Append ``value`` for every subscriber; returns its offset."""
        return self._apply(self._sync("apublish").publish(value))

    def advance(self, subscriber: str) -> T | None:
        """Consume and return the element at the cursor; ``None`` when there is none."""
        return self._apply(self._sync("aadvance").advance(subscriber))

    def gc(self) -> int:
        """Drop what no durable cursor still needs; returns the number removed."""
        return self._apply(self._sync("agc").gc())

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

    # -- awaitable twins ------------------------------------------------------------------

    def _remote(self) -> ReplicatedTopicStorage[T] | None:
        return self._storage if self._replicated else None  # type: ignore[return-value]

    async def asubscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE
    ) -> SubscribeOutcome:
        """:meth:`subscribe`, also on replicated storage (returns once committed)."""
        remote = self._remote()
        if remote is None:
            return self.subscribe(subscriber, durability)
        return self._apply(await remote.subscribe_async(subscriber, durability))

    async def areconnect(self, subscriber: str) -> bool:
        remote = self._remote()
        if remote is None:
            return self.reconnect(subscriber)
        return self._apply(await remote.reconnect_async(subscriber))

    async def adisconnect(self, subscriber: str) -> bool:
        remote = self._remote()
        if remote is None:
            return self.disconnect(subscriber)
        return self._apply(await remote.disconnect_async(subscriber))

    async def apublish(self, value: T) -> int:
        remote = self._remote()
        if remote is None:
            return self.publish(value)
        return self._apply(await remote.publish_async(value))

    async def aadvance(self, subscriber: str) -> T | None:
        remote = self._remote()
        if remote is None:
            return self.advance(subscriber)
        return self._apply(await remote.advance_async(subscriber))

    async def agc(self) -> int:
        remote = self._remote()
        if remote is None:
            return self.gc()
        return self._apply(await remote.gc_async())

    async def stream(self, subscriber: str) -> AsyncIterator[T]:
        """Yield the subscriber's elements as they arrive, advancing its cursor.

        Waits (while unavailable or caught up) through the subscriber's reader; it never
        subscribes. Cancellation never skips an element. Locally the cursor advances in
        the same step that yields the element. Over replicated storage the element at
        the cursor is yielded first and the cursor advances when the next element is
        requested, so an interrupted consumer sees it again (at least once); use one
        stream per subscriber id.
        """
        reader = self.reader(subscriber)
        remote = self._remote()
        while True:
            await wait_until(reader, context=self.ctx)
            if remote is None:
                if self._storage.read_stream(subscriber):
                    yield cast(T, self.advance(subscriber))
                continue
            unread = self._storage.read_stream(subscriber)
            if unread:
                yield unread[0]
                await self.aadvance(subscriber)
