"""A subscriber's comings and goings on a :class:`~.topic.TopicCell`: reconnect,
disconnect and delete, synchronous (capability ``sync``) and awaitable. Subscribing
is in :mod:`.topic_replay` (it takes a start position)."""

from __future__ import annotations

from typing import TypeVar, cast

from ..core.topic import check_subscriber
from ..errors import UnsupportedOperation
from ..names import check_member
from ..storage.topic import (
    DeleteSubscriberTopicStorage,
    SyncDeleteSubscriberTopicStorage,
    as_delete_subscriber_topic,
)
from .topic_part import TopicPart

T = TypeVar("T")


class TopicSubscribers(TopicPart[T]):
    """Mixed into :class:`~.topic.TopicCell`."""

    def try_reconnect(self, subscriber: str) -> bool:
        """Bring an offline durable subscriber back; ``False`` when nothing changed."""
        storage = self._require_sync("try_reconnect", "reconnect(subscriber)")
        return self._apply(storage.try_reconnect(subscriber))

    def try_disconnect(self, subscriber: str) -> bool:
        """Durable: go offline keeping the cursor. Ephemeral: forget the subscription."""
        storage = self._require_sync("try_disconnect", "disconnect(subscriber)")
        return self._apply(storage.try_disconnect(subscriber))

    def try_delete_subscriber(self, subscriber: str) -> bool:
        """Forget the subscription and its cursor; ``False`` when the id is unknown."""
        self._require_sync("try_delete_subscriber", "delete_subscriber(subscriber)")
        storage = cast(SyncDeleteSubscriberTopicStorage[T], self._deletable(subscriber))
        return self._apply(storage.try_delete_subscriber(subscriber))

    def _deletable(self, subscriber: str) -> DeleteSubscriberTopicStorage[T]:
        """The backend's deletion seam, after checking ``subscriber``'s name."""
        check_member(check_subscriber(subscriber), "subscriber name")
        storage = as_delete_subscriber_topic(self._storage)
        if storage is None:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} cannot delete a subscriber "
                "(it does not declare the subscriber_delete capability); use a local, "
                "node or client topic")
        return storage

    async def reconnect(self, subscriber: str) -> bool:
        """Bring an offline durable subscriber back; ``False`` when nothing changed."""
        self._own()
        if self._sync is not None:
            return self.try_reconnect(subscriber)
        return self._apply(await self._storage.reconnect(subscriber))

    async def disconnect(self, subscriber: str) -> bool:
        """Durable: go offline keeping the cursor. Ephemeral: forget the subscription."""
        self._own()
        if self._sync is not None:
            return self.try_disconnect(subscriber)
        return self._apply(await self._storage.disconnect(subscriber))

    async def delete_subscriber(self, subscriber: str) -> bool:
        """Forget the subscription, durable or ephemeral, connected or not: its cursor no
        longer holds elements back nor takes one of ``max_subscribers``, its readers read
        ``None``, and a later ``subscribe`` of the id starts at the tail as a new one.
        ``False`` (nothing changes) when the id is unknown. ``InvalidName`` for an id over
        the name rule; ``UnsupportedOperation`` on a backend without the capability."""
        self._own()
        if self._sync is not None:
            return self.try_delete_subscriber(subscriber)
        storage = self._deletable(subscriber)
        return self._apply(await storage.delete_subscriber(subscriber))
