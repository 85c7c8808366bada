"""A client's topics, noting the ephemeral subscriptions the client started.

An ephemeral subscription is replicated state until something disconnects it; one left
by a client that closed would stay for good, holding one of its topic's
``max_subscribers`` slots (a worker that restarts and subscribes a fresh id each time
would fill the topic). The end of its session (:mod:`.ending`) ends those the client
owns (the latest ephemeral subscribe of an id decides its owner); where the session
cannot be ended (a member without it, no answer), :meth:`~.cluster.ClusterClient.close`
disconnects the ones its topics started (``Subscribed`` as ephemeral) and did not end
themselves. A topic
holding such subscriptions is kept in its client's :attr:`~EphemeralTrackingTopicStorage.held`
set until it ended them, so it is there to end them even if its cell was let go.
Those of a client that died without closing are removed by the cluster once no member
has reported the client alive for a grace (:mod:`..replicated.ephemeral_owners`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from ..core.topic import Durability, Start, SubscribeOutcome, TopicTransition
from ..errors import SubscriptionLost
from ..storage.remote import RemoteTopicStorage


class EphemeralTrackingTopicStorage(RemoteTopicStorage):
    """A remote topic whose :attr:`started` lists the ephemeral subscribers it started
    and has not disconnected or deleted since."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.started: dict[str, None] = {}
        #: The client's topics holding ephemeral subscriptions they started: this one
        #: is in it while :attr:`started` is not empty (``None``: not tracked).
        self.held: set[EphemeralTrackingTopicStorage] | None = None

    def _noted(self, subscriber: str, durability: Durability | str,
               transition: TopicTransition[SubscribeOutcome]) -> TopicTransition[SubscribeOutcome]:
        if (transition.result is SubscribeOutcome.Subscribed
                and Durability(durability) is Durability.EPHEMERAL):
            self.started[subscriber] = None
            if self.held is not None:
                self.held.add(self)
        return transition

    def _ended(self, subscriber: str) -> None:
        self.started.pop(subscriber, None)
        if not self.started and self.held is not None:
            self.held.discard(self)

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE,
        *, timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        transition = await super().subscribe(subscriber, durability, timeout=timeout)
        return self._noted(subscriber, durability, transition)

    async def subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        transition = await super().subscribe_at(subscriber, durability, start, timeout=timeout)
        return self._noted(subscriber, durability, transition)

    async def subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        transition = await super().subscribe_at_time(subscriber, durability, stamp,
                                                     timeout=timeout)
        return self._noted(subscriber, durability, transition)

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        transition = await super().disconnect(subscriber, timeout=timeout)
        self._ended(subscriber)
        return transition

    async def delete_subscriber(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        transition = await super().delete_subscriber(subscriber, timeout=timeout)
        self._ended(subscriber)
        return transition

    def lost(self, subscriber: str) -> SubscriptionLost | None:
        """The error of a wait for ``subscriber``, which the topic no longer knows, when
        this client started it as ephemeral and did not end it (``None`` otherwise)."""
        if subscriber not in self.started:
            return None
        return SubscriptionLost(
            f"{self.name}: the ephemeral subscription {subscriber!r} this client started is "
            "gone, though the client did not end it: the cluster ended it with the client "
            "session that owned it (given up for the bound on client sessions, idle for an "
            "hour, or reaped after no member reported this client for 90 s), or another "
            "client or member disconnected or deleted it. Elements published since were "
            "not delivered to it; subscribe it again to go on (await topic.subscribe("
            f"{subscriber!r}, 'ephemeral'))")

    def ephemeral_started(self) -> list[str]:
        """The ephemeral subscribers this topic started and did not end."""
        return list(self.started)


#: Seconds a closing client gives the disconnects of its ephemeral subscriptions.
END_TIMEOUT = 2.0


async def end_ephemeral(topics: Iterable[object], op_timeout: float) -> None:
    """Disconnect the ephemeral subscriptions ``topics`` started, within
    :data:`END_TIMEOUT` (or ``op_timeout`` when shorter) seconds; a failure is let go
    (the client is closing)."""
    timeout = min(op_timeout, END_TIMEOUT)
    started = [(topic, subscriber) for topic in topics
               if isinstance(topic, EphemeralTrackingTopicStorage)
               for subscriber in topic.ephemeral_started()]
    await asyncio.gather(*(topic.disconnect(subscriber, timeout=timeout)
                           for topic, subscriber in started), return_exceptions=True)
