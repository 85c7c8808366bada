"""The storage seam of a TopicCell: the topic core's operations and reads.

The local backend is :class:`~lazily_queue.core.topic.TopicCore` itself. Every
operation returns a :class:`~lazily_queue.core.topic.TopicTransition` (result plus the
subscriber ids to invalidate). A backend whose state also changes outside the shell's
own calls (a replica applying committed entries) implements
:class:`ObservableTopicStorage`: it reports the invalidated ids of every transition to
the listener, and the shell then invalidates from those reports only. A backend whose
operations need a round trip implements :class:`ReplicatedTopicStorage`; the shell's
``a``-prefixed methods go through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..core.topic import Durability, SubscribeOutcome, TopicTransition

T = TypeVar("T")

TopicChangeListener = Callable[[frozenset[str]], None]
"""``listener(invalidated_ids)``, called once per applied transition."""


@runtime_checkable
class TopicView(Protocol[T]):
    """The read surface every topic backend offers (possibly a replica's local view)."""

    def read(self, subscriber: str) -> T | None: ...

    def read_stream(self, subscriber: str) -> list[T] | None:
        """The unread suffix, or ``None`` for an unknown or offline subscriber."""
        ...

    def base_offset(self) -> int: ...

    def end_offset(self) -> int: ...

    def elements(self) -> list[T]: ...

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        """``{id: {durability, connected, cursor}}``."""
        ...

    def snapshot(self) -> dict[str, Any]: ...


@runtime_checkable
class TopicStorage(TopicView[T], Protocol[T]):
    """A backend whose operations complete synchronously."""

    def subscribe(
        self, subscriber: str, durability: Durability | str = ...
    ) -> TopicTransition[SubscribeOutcome]: ...

    def reconnect(self, subscriber: str) -> TopicTransition[bool]: ...

    def disconnect(self, subscriber: str) -> TopicTransition[bool]: ...

    def publish(self, value: T) -> TopicTransition[int]: ...

    def advance(self, subscriber: str) -> TopicTransition[T | None]: ...

    def gc(self) -> TopicTransition[int]: ...


@runtime_checkable
class ObservableTopicStorage(Protocol):
    def set_change_listener(self, listener: TopicChangeListener | None) -> None:
        """Report every transition's invalidated ids, including ones the shell did not make."""
        ...


@runtime_checkable
class ReplicatedTopicStorage(TopicView[T], Protocol[T]):
    """Operations that return once committed, with the same transitions as the sync ones."""

    async def subscribe_async(
        self, subscriber: str, durability: Durability | str = ..., *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]: ...

    async def reconnect_async(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]: ...

    async def disconnect_async(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]: ...

    async def publish_async(
        self, value: T, *, timeout: float | None = None
    ) -> TopicTransition[int]: ...

    async def advance_async(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[T | None]: ...

    async def gc_async(self, *, timeout: float | None = None) -> TopicTransition[int]: ...
