"""The streaming half of :class:`~.topic.TopicCell`: a subscriber's elements as they
arrive, locally one step per element, over a replicated backend read from the member's
applied state and committed a batch at a time."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, TypeVar, cast

from ..core.headers import view
from ..core.topic import TopicTransition
from ..errors import UnknownSubscriber, shown
from ..reactive import Context, Slot, wait_until
from ..storage.topic import SyncTopicStorage, TopicStorage, as_headers_topic, as_messages_topic
from .loop_owner import LoopOwned
from .message import Message, enqueued_at

#: Elements ``stream`` reads per cursor commit over a replicated backend.
DEFAULT_BATCH = 256

T = TypeVar("T")
R = TypeVar("R")


class TopicStreams(LoopOwned, Generic[T]):
    """``stream``, ``stream_messages`` and the waits of ``advance`` (the cell sets up what
    is declared here)."""

    name: str
    ctx: Context
    _sync: SyncTopicStorage[T] | None
    _storage: TopicStorage[T]
    _raise_if_stopped: Callable[[], None]
    _skip: Callable[[str], TopicTransition[int]] | None

    def reader(self, subscriber: str) -> Slot[list[T] | None]:
        raise NotImplementedError

    def _apply(self, transition: TopicTransition[R]) -> R:
        raise NotImplementedError

    def try_advance(self, subscriber: str) -> T | None:
        raise NotImplementedError

    async def _wait_unread(self, reader: Slot[list[T] | None], subscriber: str) -> None:
        """Wait until ``reader`` (``subscriber``'s) has an unread element; raises
        :class:`UnknownSubscriber` once the topic no longer knows ``subscriber``."""
        def unread() -> list[T] | None:
            self._raise_if_stopped()
            value = reader()
            if value is None and self._storage.cursor(subscriber) is None:
                raise self._gone(subscriber)
            return value

        await wait_until(unread, context=self.ctx)

    async def _wait_past(self, reader: Slot[list[T] | None], subscriber: str,
                         offset: int) -> None:
        """Wait until ``subscriber``'s unread elements reach past ``offset``; raises
        :class:`UnknownSubscriber` once the topic no longer knows ``subscriber``."""
        def past() -> bool:
            self._raise_if_stopped()
            value = reader()
            cursor = self._storage.cursor(subscriber)
            if cursor is None:
                if value is None:
                    raise self._gone(subscriber)
                return False
            return cursor + len(value or ()) > offset

        await wait_until(past, context=self.ctx)

    def _resets(self) -> int:
        """How many times the storage's state was installed anew (0 where it never is)."""
        return cast(int, getattr(self._storage, "resets", 0))

    async def _known(self, subscriber: str) -> None:
        """Raise :class:`UnknownSubscriber` unless the topic knows ``subscriber`` (a
        broker's storage reads a mirror: it is refreshed before the id is called
        unknown)."""
        if self._storage.cursor(subscriber) is not None:
            return
        refresh = getattr(self._storage, "sync", None)
        if refresh is not None:
            await refresh()
            if self._storage.cursor(subscriber) is not None:
                return
        lost = self._lost(subscriber)
        if lost is not None:
            raise lost
        raise UnknownSubscriber(
            f"{self.name}: subscriber {subscriber!r} is not subscribed, so nothing would "
            f"ever arrive for it; subscribe it first (await topic.subscribe({subscriber!r}))")

    def _lost(self, subscriber: str) -> UnknownSubscriber | None:
        """What says that the storage's owner lost ``subscriber``'s subscription without
        ending it (a client's ephemeral one, :mod:`lazily_queue.client.ephemeral`)."""
        lost = getattr(self._storage, "lost", None)
        return None if lost is None else cast(UnknownSubscriber | None, lost(subscriber))

    def _gone(self, subscriber: str) -> UnknownSubscriber:
        lost = self._lost(subscriber)
        if lost is not None:
            return lost
        return UnknownSubscriber(
            f"{self.name}: subscriber {subscriber!r} was dropped while this call waited for "
            "it (deleted, or its ephemeral subscription ended: disconnected, or reaped with "
            "the client session that owned it), so nothing would ever arrive for it; "
            f"subscribe it again (await topic.subscribe({subscriber!r}), adding 'ephemeral' "
            "for an ephemeral one) to go on")

    async def stream(
        self, subscriber: str, *, batch: int | None = None
    ) -> AsyncGenerator[T, None]:
        """Yield the subscriber's elements as they arrive, advancing its cursor.

        Waits (while offline or caught up) through the subscriber's reader; it never
        subscribes: an id the topic does not know raises
        :class:`~lazily_queue.errors.UnknownSubscriber` at the first element asked for, and
        at the one it waits for when the id is dropped meanwhile.
        Cancellation never skips an element. Locally the cursor advances in
        the same step that yields the element. Over a backend without ``sync`` the
        elements are read from this node's applied state, up to ``batch`` at a time
        (default :data:`DEFAULT_BATCH`), and the cursor moves past them in one commit
        once the element after the last of them is requested: an interrupted consumer
        sees the uncommitted ones again (at least once; the window is the batch). A
        client's stream that links to a member which applied less goes on after the
        last element it handed out. Use one stream per subscriber id.
        """
        self._own()
        async for value in self._stream(subscriber, batch, None):
            yield value

    async def stream_messages(
        self, subscriber: str, *, batch: int | None = None
    ) -> AsyncGenerator[Message[T], None]:
        """:meth:`stream`, as messages: the id is the element's offset, ``enqueued_at``
        its publish time (``None`` when the backend keeps none), ``headers`` those it
        was published with."""
        self._own()
        messages = as_messages_topic(self._storage)
        stamp_of = (lambda offset: 0) if messages is None else messages.stamp_of
        with_headers = as_headers_topic(self._storage)
        headers_of = (lambda offset: None) if with_headers is None else with_headers.headers_of

        def message(offset: int, value: T) -> Message[T]:
            headers = headers_of(offset)
            if headers is None:
                return Message(offset, value, enqueued_at(stamp_of(offset)))
            return Message(offset, value, enqueued_at(stamp_of(offset)), 1, view(headers))

        async for m in self._stream(subscriber, batch, message):
            yield m

    async def _stream(
        self, subscriber: str, batch: int | None, make: Callable[[int, T], R] | None
    ) -> AsyncGenerator[Any, None]:
        reader = self.reader(subscriber)
        size = DEFAULT_BATCH if batch is None else batch
        if type(size) is not int or size < 1:
            raise ValueError(f"batch must be an int >= 1, got {shown(batch)}")
        await self._known(subscriber)
        handed, resets = 0, self._resets()  # the offset past the last batch handed out
        while True:
            if self._sync is not None:
                await self._wait_unread(reader, subscriber)
                if self._skip is not None:  # expired elements are never handed out
                    self._apply(self._skip(subscriber))
                if self._storage.read_stream(subscriber):
                    if make is None:
                        yield cast(T, self.try_advance(subscriber))
                    else:
                        offset = cast(int, self._storage.cursor(subscriber))
                        yield make(offset, cast(T, self.try_advance(subscriber)))
                continue
            # Read first: the reader (the whole unread suffix) is only built to wait.
            self._raise_if_stopped()
            cursor = self._storage.cursor(subscriber)
            unread = self._storage.read_stream(subscriber, size)
            if cursor is not None and cursor < handed and self._resets() != resets:
                # The state was installed anew (a client linked to a member that applied
                # less) behind what this stream handed out: go on from where it stopped.
                ahead = handed - cursor
                unread = (self._storage.read_stream(subscriber, ahead + size) or [])[ahead:]
                if not unread:
                    await self._wait_past(reader, subscriber, handed)
                    continue
                cursor = handed
            if not unread or cursor is None:
                await self._wait_unread(reader, subscriber)
                continue
            resets = self._resets()
            expired = getattr(self._storage, "expired_offsets", None)
            gone = frozenset() if expired is None else expired(cursor, cursor + len(unread))
            if make is None and not gone:
                for value in unread:
                    yield value
            else:
                for i, value in enumerate(unread):
                    if cursor + i not in gone:  # expired at this read: never handed out
                        yield value if make is None else make(cursor + i, value)
            handed = cursor + len(unread)
            self._apply(await self._storage.advance_to(subscriber, handed))
