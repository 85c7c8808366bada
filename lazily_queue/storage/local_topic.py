"""The in-process topic backend: a :class:`~lazily_queue.core.topic.TopicCore` behind the
topic seam, with its producer dedup window, the headers of its messages and its consumer
groups (the expiring one is :mod:`.local_topic_expiry`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.dedup import DedupLimits, DedupWindow
from ..core.headers import Headers, OffsetHeaders
from ..core.push_options import PushOptions
from ..core.topic import Durability, Start, SubscribeOutcome, TopicCore, TopicTransition
from ..errors import UnsupportedOperation
from .attempts import check_timeout
from .capabilities import StorageCapabilities
from .local import Clock, _elapsed_ms, _ms

if TYPE_CHECKING:
    from .local_groups import LocalGroupStorage

T = TypeVar("T")


class LocalTopicStorage(Generic[T]):
    """A :class:`TopicCore` behind the topic seam (capabilities ``sync``, ``dedup``,
    ``replay``, ``groups``). ``groups`` are its consumer groups by name (restored ones),
    fed in the step that publishes."""

    __slots__ = ("_clock", "_headers", "core", "dedup", "groups")

    capabilities = StorageCapabilities(sync=True, dedup=True, messages=True, replay=True,
                                       replay_time=True, headers=True, groups=True,
                                       subscriber_delete=True)

    def __init__(self, core: TopicCore[T] | None = None, *,
                 dedup: DedupLimits | None = None, clock: Clock | None = None,
                 groups: Mapping[str, LocalGroupStorage] | None = None) -> None:
        self.dedup: DedupWindow[str] = DedupWindow(dedup)
        self.core: TopicCore[T] = TopicCore() if core is None else core
        self._clock = None if clock is None else _ms(clock)
        self.groups: dict[str, LocalGroupStorage] = dict(groups or {})
        self._headers: OffsetHeaders | None = None

    def open_group(
        self, topic: str, group: str, *, visibility_timeout: float, max_deliveries: int,
        start: Start = "tail", clock: Clock | None = None,
    ) -> LocalGroupStorage:
        """The group ``group`` (made at ``start`` the first time; the same settings after
        that, or :class:`~lazily_queue.errors.InvalidConfiguration`)."""
        from .local_groups import open_group

        return open_group(self.groups, self.core, topic, group, start, clock,
                          visibility_timeout=visibility_timeout, max_deliveries=max_deliveries)

    def __repr__(self) -> str:
        return f"LocalTopicStorage({self.core!r})"

    # -- reads ---------------------------------------------------------------------------

    def read(self, subscriber: str) -> T | None:
        return self.core.read(subscriber)

    def read_stream(self, subscriber: str, limit: int | None = None) -> list[T] | None:
        return self.core.read_stream(subscriber, limit)

    def base_offset(self) -> int:
        return self.core.base_offset()

    def end_offset(self) -> int:
        return self.core.end_offset()

    def elements(self) -> list[T]:
        return self.core.elements()

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        return self.core.subscriptions()

    def limited_topic(self) -> Any:
        """The core when it has retention limits (a ``LimitedTopic``), else ``None``."""
        return self.core if hasattr(self.core, "gaps") else None

    def snapshot(self) -> dict[str, Any]:
        """The core's snapshot, plus ``groups`` (each a work queue's) when there are any."""
        snapshot = self.core.snapshot()
        if self.groups:
            snapshot["groups"] = {name: g.snapshot() for name, g in self.groups.items()}
        return snapshot

    # -- synchronous operations ----------------------------------------------------------

    def try_subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE
    ) -> TopicTransition[SubscribeOutcome]:
        return self.core.subscribe(subscriber, durability)

    def try_subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start
    ) -> TopicTransition[SubscribeOutcome]:
        return self.core.subscribe(subscriber, durability, start)

    def try_seek(self, subscriber: str, offset: int) -> TopicTransition[int | None]:
        return self.core.seek(subscriber, offset)

    def try_subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int
    ) -> TopicTransition[SubscribeOutcome]:
        return self.core.subscribe(subscriber, durability, self.core.offset_at(stamp))

    def try_seek_time(self, subscriber: str, stamp: int) -> TopicTransition[int | None]:
        return self.core.seek(subscriber, self.core.offset_at(stamp))

    def try_reconnect(self, subscriber: str) -> TopicTransition[bool]:
        return self.core.reconnect(subscriber)

    def try_disconnect(self, subscriber: str) -> TopicTransition[bool]:
        return self.core.disconnect(subscriber)

    def try_delete_subscriber(self, subscriber: str) -> TopicTransition[bool]:
        return self.core.delete_subscriber(subscriber)

    def try_publish(self, value: T) -> TopicTransition[int]:
        clock = self._clock
        stamp = None if clock is None else clock()
        transition = self.core.publish(value, stamp)
        if self.groups:
            for group in self.groups.values():
                group.feed(value, stamp)
        return transition

    def stamp_of(self, offset: int) -> int:
        return self.core.stamp_of(offset)

    def try_advance(self, subscriber: str) -> TopicTransition[T | None]:
        return self.core.advance(subscriber)

    def try_gc(self) -> TopicTransition[int]:
        return self.core.gc()

    # -- awaitable operations ------------------------------------------------------------

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_subscribe(subscriber, durability)

    async def subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_subscribe_at(subscriber, durability, start)

    async def seek(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_seek(subscriber, offset)

    async def subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_subscribe_at_time(subscriber, durability, stamp)

    async def seek_time(
        self, subscriber: str, stamp: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_seek_time(subscriber, stamp)

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_reconnect(subscriber)

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_disconnect(subscriber)

    async def delete_subscriber(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_delete_subscriber(subscriber)

    async def publish(self, value: T, *, timeout: float | None = None) -> TopicTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_publish(value)

    async def publish_headers(
        self, value: T, headers: Headers, msg_id: str | None = None, *,
        timeout: float | None = None,
    ) -> TopicTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_publish_options(value, PushOptions(msg_id, headers))

    def headers_of(self, offset: int) -> Headers | None:
        table = self._headers
        if table is None or offset < self.core.base_offset():
            return None
        return table.get(offset)

    async def publish_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_publish_options(value, PushOptions(msg_id))

    async def publish_options(
        self, value: T, options: PushOptions, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_publish_options(value, options)

    def try_publish_options(self, value: T, options: PushOptions) -> TopicTransition[int]:
        """A publish with ``options`` (checked): deduplicated by ``msg_id``, its headers
        kept by offset, its TTL noted (a backend with ``expiry``)."""
        msg_id = options.msg_id
        now = 0
        if msg_id is not None:
            now = _elapsed_ms()
            found, offset = self.dedup.lookup(msg_id, now)
            if found:
                return TopicTransition(offset, frozenset())
        transition = self._publish_one(value, options.ttl_ms)
        if msg_id is not None:
            self.dedup.record(msg_id, transition.result, now)
        if options.headers is not None:
            table = self._headers
            if table is None:
                table = self._headers = OffsetHeaders(self.core)
            table.forget_below(self.core.base_offset())
            table.note(transition.result, options.headers)
        return transition

    def _publish_one(self, value: T, ttl_ms: int | None) -> TopicTransition[int]:
        if ttl_ms is not None:
            raise UnsupportedOperation(f"{type(self).__name__} has no message expiry; "
                                       "open the topic with ttl= or max_age=")
        return self.try_publish(value)

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[T | None]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_advance(subscriber)

    async def gc(self, *, timeout: float | None = None) -> TopicTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        return self.try_gc()

    def cursor(self, subscriber: str) -> int | None:
        return self.core.cursor(subscriber)

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        if timeout is not None:
            check_timeout(timeout)
        return self.core.advance_to(subscriber, offset)
