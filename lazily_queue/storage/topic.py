"""The storage seam of a TopicCell: what every topic backend implements.

:class:`TopicStorage` is required of every backend (local, Raft, a remote client, a
broker adapter): the awaitable operations, each returning a
:class:`~lazily_queue.core.topic.TopicTransition` (result plus the subscriber ids to
invalidate), and the synchronous reads the readers derive from. ``poll`` consumes the
element at a subscriber's cursor without waiting (the cell does the waiting).

Declared capabilities (:class:`StorageCapabilities`): ``sync`` for
:class:`SyncTopicStorage` (the spec's synchronous operations, ``try_*``), and
``observable`` for :class:`ObservableTopicStorage` (every transition's ids reported to
the listener, including ones the cell did not make; the cell then invalidates from the
reports only). A backend whose concurrent calls keep their order (a Raft one: each
proposes as it starts) may add ``publish_many(values)``, the transitions of publishes
made together, which ``TopicCell.publish_many`` then uses. The local backend is
:class:`~lazily_queue.storage.local_topic.LocalTopicStorage`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from ..core.headers import Headers
from ..core.topic import Durability, Start, SubscribeOutcome, TopicTransition
from .capabilities import StorageCapabilities, declared

if TYPE_CHECKING:
    from .work import WorkQueueStorage

T = TypeVar("T")

TopicChangeListener = Callable[[frozenset[str]], None]
"""``listener(invalidated_ids)``, called once per applied transition."""


class TopicStorage(Protocol[T]):
    """A broadcast log with per-subscriber cursors."""

    @property
    def capabilities(self) -> StorageCapabilities: ...

    def read(self, subscriber: str) -> T | None: ...

    def read_stream(self, subscriber: str, limit: int | None = None) -> list[T] | None:
        """The unread suffix, or ``None`` for an unknown or offline subscriber."""
        ...

    def base_offset(self) -> int: ...

    def end_offset(self) -> int: ...

    def elements(self) -> list[T]: ...

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        """``{id: {durability, connected, cursor}}``."""
        ...

    def snapshot(self) -> dict[str, Any]: ...

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]: ...

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]: ...

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]: ...

    async def publish(self, value: T, *, timeout: float | None = None) -> TopicTransition[int]:
        ...

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[T | None]:
        """Advance: consume the element at the cursor, or ``None`` (nothing changes)."""
        ...

    def cursor(self, subscriber: str) -> int | None:
        """The subscriber's cursor in this backend's (local) state, or ``None``."""
        ...

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        """Consume everything before ``offset`` at once (a batch read from
        :meth:`read_stream`): the new cursor, or ``None`` for an unknown or offline id."""
        ...

    async def gc(self, *, timeout: float | None = None) -> TopicTransition[int]: ...


class SyncTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``sync``: the operations complete synchronously."""

    def try_subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE
    ) -> TopicTransition[SubscribeOutcome]: ...

    def try_reconnect(self, subscriber: str) -> TopicTransition[bool]: ...

    def try_disconnect(self, subscriber: str) -> TopicTransition[bool]: ...

    def try_publish(self, value: T) -> TopicTransition[int]: ...

    def try_advance(self, subscriber: str) -> TopicTransition[T | None]: ...

    def try_gc(self) -> TopicTransition[int]: ...


class DedupTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``dedup``."""

    async def publish_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        """:meth:`publish`, unless ``msg_id`` is in the dedup window: then the first
        publish's offset, and nothing changes."""
        ...


class MessageTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``messages``: enqueue stamps by offset (an offset is a message id)."""

    def stamp_of(self, offset: int) -> int:
        """The enqueue stamp (milliseconds; 0: unknown) of the element at ``offset``."""
        ...


class HeaderTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``headers``: elements published with headers, kept by offset."""

    async def publish_headers(
        self, value: T, headers: Headers, msg_id: str | None = None, *,
        timeout: float | None = None,
    ) -> TopicTransition[int]:
        """:meth:`publish` of an element with ``headers`` (checked, non-empty); with a
        ``msg_id``, deduplicated as ``publish_once`` is."""
        ...

    def headers_of(self, offset: int) -> Headers | None:
        """The headers of the retained element at ``offset`` (``None``: none)."""
        ...


class ReplayTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``replay``."""

    async def subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        """:meth:`subscribe`, a new subscription's cursor at ``start``
        (:class:`~lazily_queue.errors.OffsetOutOfRange` outside the retained range)."""
        ...

    async def seek(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        """Move a connected cursor to ``offset`` in the retained range: the cursor, or
        ``None`` for an unknown or offline id."""
        ...


class SyncReplayTopicStorage(ReplayTopicStorage[T], SyncTopicStorage[T], Protocol[T]):
    """Capabilities ``replay`` and ``sync``."""

    def try_subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start
    ) -> TopicTransition[SubscribeOutcome]: ...

    def try_seek(self, subscriber: str, offset: int) -> TopicTransition[int | None]: ...


class ReplayTimeTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``replay_time``: positions given as enqueue stamps (ms since the epoch)."""

    async def subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        """:meth:`subscribe`, a new subscription's cursor at the first retained element
        enqueued at or after ``stamp`` (the tail when none)."""
        ...

    async def seek_time(
        self, subscriber: str, stamp: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        """:meth:`seek` to the first retained element enqueued at or after ``stamp``."""
        ...


class SyncReplayTimeTopicStorage(ReplayTimeTopicStorage[T], SyncTopicStorage[T], Protocol[T]):
    """Capabilities ``replay_time`` and ``sync``."""

    def try_subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int
    ) -> TopicTransition[SubscribeOutcome]: ...

    def try_seek_time(self, subscriber: str, stamp: int) -> TopicTransition[int | None]: ...


class DeleteSubscriberTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``subscriber_delete``."""

    async def delete_subscriber(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        """Forget the subscription and its cursor (durable or ephemeral, connected or
        not); ``False`` when the id is unknown (nothing changes)."""
        ...


class SyncDeleteSubscriberTopicStorage(DeleteSubscriberTopicStorage[T], Protocol[T]):
    """Capabilities ``subscriber_delete`` and ``sync``."""

    def try_delete_subscriber(self, subscriber: str) -> TopicTransition[bool]: ...


class GroupTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``groups``."""

    def open_group(
        self, topic: str, group: str, *, visibility_timeout: float, max_deliveries: int,
        start: Start = "tail", clock: Callable[[], float] | None = None,
    ) -> WorkQueueStorage:
        """The work queue of consumer group ``group``, declared at ``start`` the first
        time (:mod:`lazily_queue.core.groups`); ``visibility_timeout`` in seconds (a
        local backend: in its clock's unit)."""
        ...


class ObservableTopicStorage(TopicStorage[T], Protocol[T]):
    """Capability ``observable``."""

    def set_change_listener(self, listener: TopicChangeListener | None) -> None:
        """Report every transition's invalidated ids, including ones the cell did not make."""
        ...


REQUIRED = ("read", "read_stream", "cursor", "base_offset", "end_offset", "elements",
            "subscriptions", "snapshot", "subscribe", "reconnect", "disconnect", "publish",
            "poll", "advance_to", "gc")
CAPABILITY_METHODS = {
    "sync": ("try_subscribe", "try_reconnect", "try_disconnect", "try_publish",
             "try_advance", "try_gc"),
    "observable": ("set_change_listener",),
    "lifecycle": ("raise_if_stopped", "set_change_listener"),
    "dedup": ("publish_once",),
    "expiry": ("expired_count", "set_expired_listener"),
    "messages": ("stamp_of",),
    "replay": ("subscribe_at", "seek"),
    "headers": ("publish_headers", "headers_of"),
    "replay_time": ("subscribe_at_time", "seek_time"),
    "groups": ("open_group",),
    "subscriber_delete": ("delete_subscriber",),
}


def topic_capabilities(storage: TopicStorage[T]) -> StorageCapabilities:
    """The storage's declared capabilities, checked against its methods (``TypeError``)."""
    return declared(storage, "topic", REQUIRED, CAPABILITY_METHODS)


def as_sync_topic(storage: TopicStorage[T]) -> SyncTopicStorage[T] | None:
    return cast(SyncTopicStorage[T], storage) if storage.capabilities.sync else None


def as_messages_topic(storage: TopicStorage[T]) -> MessageTopicStorage[T] | None:
    return cast(MessageTopicStorage[T], storage) if storage.capabilities.messages else None


def as_dedup_topic(storage: TopicStorage[T]) -> DedupTopicStorage[T] | None:
    return cast(DedupTopicStorage[T], storage) if storage.capabilities.dedup else None


def as_headers_topic(storage: TopicStorage[T]) -> HeaderTopicStorage[T] | None:
    return cast(HeaderTopicStorage[T], storage) if storage.capabilities.headers else None


def as_replay_topic(storage: TopicStorage[T]) -> ReplayTopicStorage[T] | None:
    return cast(ReplayTopicStorage[T], storage) if storage.capabilities.replay else None


def as_replay_time_topic(storage: TopicStorage[T]) -> ReplayTimeTopicStorage[T] | None:
    caps = storage.capabilities
    return cast(ReplayTimeTopicStorage[T], storage) if caps.replay_time else None


def as_delete_subscriber_topic(
    storage: TopicStorage[T],
) -> DeleteSubscriberTopicStorage[T] | None:
    caps = storage.capabilities
    return cast(DeleteSubscriberTopicStorage[T], storage) if caps.subscriber_delete else None


def as_group_topic(storage: TopicStorage[T]) -> GroupTopicStorage[T] | None:
    return cast(GroupTopicStorage[T], storage) if storage.capabilities.groups else None


def as_observable_topic(storage: TopicStorage[T]) -> ObservableTopicStorage[T] | None:
    caps = storage.capabilities
    return cast(ObservableTopicStorage[T], storage) if caps.observable else None
