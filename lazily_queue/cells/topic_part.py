"""What a part of :class:`~.topic.TopicCell` mixed into it reads from the cell."""

from __future__ import annotations

from typing import Generic, TypeVar

from ..core.topic import TopicTransition
from ..storage.topic import SyncTopicStorage, TopicStorage
from .loop_owner import LoopOwned

T = TypeVar("T")
R = TypeVar("R")


class TopicPart(LoopOwned, Generic[T]):
    """Mixed into :class:`~.topic.TopicCell` (which sets the attributes below)."""

    name: str
    _storage: TopicStorage[T]
    _sync: SyncTopicStorage[T] | None

    def _apply(self, transition: TopicTransition[R]) -> R:
        raise NotImplementedError

    def _require_sync(self, method: str, awaitable: str) -> SyncTopicStorage[T]:
        raise NotImplementedError
