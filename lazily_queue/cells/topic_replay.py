"""The replay surface of a TopicCell: subscribe from a position and seek.

A position is ``"tail"``, ``"head"``, an offset (capability ``replay``) or a
timezone-aware ``datetime`` (capability ``replay_time``: the first retained element
enqueued at or after it); see :meth:`TopicReplay.subscribe`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar, cast

from ..core.timestamps import time_position
from ..core.topic import Durability, Start, SubscribeOutcome, check_start
from ..errors import UnsupportedOperation
from ..storage.topic import (
    ReplayTimeTopicStorage,
    ReplayTopicStorage,
    SyncReplayTimeTopicStorage,
    SyncReplayTopicStorage,
    as_replay_time_topic,
    as_replay_topic,
)
from .topic_part import TopicPart

T = TypeVar("T")


class TopicReplay(TopicPart[T]):
    """Mixed into :class:`~.topic.TopicCell`."""

    def try_subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        start: Start | datetime = "tail",
    ) -> SubscribeOutcome:
        """Subscribe at ``start`` (see :meth:`subscribe`); an offline durable id
        reconnects at its cursor."""
        storage = self._require_sync("try_subscribe", "subscribe(subscriber)")
        if (stamp := time_position(start)) is not None:
            self._require_replay_time("subscribe from a time")
            timed = cast(SyncReplayTimeTopicStorage[T], storage)
            return self._apply(timed.try_subscribe_at_time(subscriber, durability, stamp))
        assert not isinstance(start, datetime)
        if check_start(start) == "tail":
            return self._apply(storage.try_subscribe(subscriber, durability))
        self._require_replay("subscribe from the head or an offset")
        replay = cast(SyncReplayTopicStorage[T], storage)
        return self._apply(replay.try_subscribe_at(subscriber, durability, start))

    def try_seek(self, subscriber: str, offset: int | datetime) -> int | None:
        """:meth:`seek`, synchronously."""
        storage = self._require_sync("try_seek", "seek(subscriber, offset)")
        if (stamp := time_position(offset)) is not None:
            self._require_replay_time("seek to a time")
            timed = cast(SyncReplayTimeTopicStorage[T], storage)
            return self._apply(timed.try_seek_time(subscriber, stamp))
        assert not isinstance(offset, datetime)
        self._require_replay("seek")
        return self._apply(cast(SyncReplayTopicStorage[T], storage).try_seek(subscriber, offset))

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        start: Start | datetime = "tail",
    ) -> SubscribeOutcome:
        """Subscribe; an offline durable id reconnects at its cursor.

        A new subscription's cursor starts at ``start``: ``"tail"`` (the default: the
        next element published), ``"head"`` (the oldest element retained) or an absolute
        offset in ``base_offset()..end_offset()`` (capability ``replay``); an offset
        outside that range raises :class:`~lazily_queue.errors.OffsetOutOfRange` naming
        the range. A timezone-aware ``datetime`` (capability ``replay_time``) starts at
        the first retained element enqueued at or after it: the head when it is before
        them all, the tail when after; a naive one (or another type) raises
        :class:`~lazily_queue.errors.InvalidTimestamp`. An existing subscription keeps
        its cursor (use :meth:`seek`). Over a replicated backend this and the other
        operations return once committed.
        """
        self._own()
        if self._sync is not None:
            return self.try_subscribe(subscriber, durability, start=start)
        if (stamp := time_position(start)) is not None:
            timed = self._require_replay_time("subscribe from a time")
            return self._apply(await timed.subscribe_at_time(subscriber, durability, stamp))
        assert not isinstance(start, datetime)
        if check_start(start) == "tail":
            return self._apply(await self._storage.subscribe(subscriber, durability))
        storage = self._require_replay("subscribe from the head or an offset")
        return self._apply(await storage.subscribe_at(subscriber, durability, start))

    async def seek(self, subscriber: str, offset: int | datetime) -> int | None:
        """Move a connected subscriber's cursor to ``offset``, backward (replay) or
        forward (skip), anywhere in ``base_offset()..end_offset()`` (capability
        ``replay``). Outside it raises :class:`~lazily_queue.errors.OffsetOutOfRange`
        naming the retained range and changes nothing. A timezone-aware ``datetime``
        (capability ``replay_time``) moves it to the first retained element enqueued at
        or after that time (the tail when none). Returns the cursor, or ``None`` when
        the subscriber is unknown or offline."""
        self._own()
        if self._sync is not None:
            return self.try_seek(subscriber, offset)
        if (stamp := time_position(offset)) is not None:
            timed = self._require_replay_time("seek to a time")
            return self._apply(await timed.seek_time(subscriber, stamp))
        assert not isinstance(offset, datetime)
        storage = self._require_replay("seek")
        return self._apply(await storage.seek(subscriber, offset))

    def _require_replay(self, what: str) -> ReplayTopicStorage[T]:
        storage = as_replay_topic(self._storage)
        if storage is None:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} cannot {what}; subscribe at "
                "the tail")
        return storage

    def _require_replay_time(self, what: str) -> ReplayTimeTopicStorage[T]:
        storage = as_replay_time_topic(self._storage)
        if storage is None:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} cannot {what}; start at the "
                "head, the tail or an offset")
        return storage
