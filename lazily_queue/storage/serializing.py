"""Storage wrappers that apply a cell's serializer (see :mod:`lazily_queue.serializers`).

Each wraps any backend of its family: values going in are encoded, values coming out
(results, reads, views) decoded; everything else passes through, with the backend's
capabilities minus ``reporting_ops`` (the deque's fast path hands out stored values).
``snapshot()`` shows the stored (encoded) form. The work queue's wrapper is in
:mod:`.serializing_work`.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from ..core.headers import Headers
from ..core.ids import Run
from ..core.queue import EMPTY, QueuePopError, QueuePushError
from ..core.topic import Durability, SubscribeOutcome, TopicTransition
from ..serializers import Codec
from .capabilities import StorageCapabilities
from .queue import QueueStorage
from .topic import TopicStorage

T = TypeVar("T")

#: The backend's batch calls (each taking a list of values and returning what holds
#: none), present on the wrapper when the backend has them.
_BATCHES = frozenset({"offer_many", "publish_many", "push_many"})


class SerializingWrapper:
    """Pass-through of everything the wrapper does not translate."""

    def __init__(self, inner: Any, codec: Codec[Any]) -> None:
        self.inner = inner
        self.codec = codec
        caps = inner.capabilities
        self.capabilities = StorageCapabilities(
            sync=caps.sync, observable=caps.observable, peek=caps.peek,
            own_clock=caps.own_clock, lifecycle=caps.lifecycle, logical_time=caps.logical_time,
            dedup=caps.dedup, messages=caps.messages, headers=caps.headers, replay=caps.replay,
            replay_time=caps.replay_time, groups=caps.groups, scheduling=caps.scheduling,
            expiry=caps.expiry, limits=caps.limits, subscriber_delete=caps.subscriber_delete)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet
            raise AttributeError(name)
        found = getattr(self.inner, name)
        if name not in _BATCHES:
            return found
        encode = self.codec.encode

        async def batch(values: list[Any], **options: Any) -> Any:
            return await found([encode(value) for value in values], **options)
        return batch

    def check_values(self, values: list[Any]) -> None:
        """The backend's check of a batch (if it has one), on the encoded values."""
        check = getattr(self.inner, "check_values", None)
        if check is not None:
            check([self.codec.encode(v) for v in values])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, {self.codec.inner!r})"


class SerializingQueueStorage(SerializingWrapper, Generic[T]):
    """A queue backend storing ``serializer.encode(value)``."""

    def __init__(self, inner: QueueStorage[Any], codec: Codec[T]) -> None:
        super().__init__(inner, codec)
        self.inner: QueueStorage[Any] = inner
        self.codec: Codec[T] = codec

    def len(self) -> int:
        return self.inner.len()

    def is_closed(self) -> bool:
        return self.inner.is_closed()

    def capacity(self) -> int | None:
        return self.inner.capacity()

    def _out(self, result: Any) -> Any:
        return result if isinstance(result, QueuePopError) else self.codec.decode(result)

    def _out_many(self, result: Any) -> Any:
        return result if isinstance(result, QueuePopError) else self.codec.decode_all(result)

    def peek(self) -> Any:
        head = self.inner.peek()  # type: ignore[attr-defined]
        return head if head is EMPTY else self.codec.decode(head)

    def elements(self) -> list[T]:
        return self.codec.decode_all(self.inner.elements())  # type: ignore[attr-defined]

    def try_push(self, value: T) -> QueuePushError | None:
        result: QueuePushError | None = self.inner.try_push(  # type: ignore[attr-defined]
            self.codec.encode(value))
        return result

    def try_pop(self) -> T | QueuePopError:
        result: T | QueuePopError = self._out(self.inner.try_pop())  # type: ignore[attr-defined]
        return result

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        return await self.inner.offer(self.codec.encode(value), timeout=timeout)

    async def offer_options(self, value: T, options: Any, *,
                            timeout: float | None = None) -> QueuePushError | None:
        inner: Any = self.inner
        return await inner.offer_options(  # type: ignore[no-any-return]
            self.codec.encode(value), options, timeout=timeout)

    async def offer_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> QueuePushError | None:
        inner: Any = self.inner
        result: QueuePushError | None = await inner.offer_once(
            self.codec.encode(value), msg_id, timeout=timeout)
        return result

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        result: T | QueuePopError = self._out(await self.inner.poll(timeout=timeout))
        return result

    async def close(self, *, timeout: float | None = None) -> None:
        await self.inner.close(timeout=timeout)

    async def poll_many(self, n: int, *, timeout: float | None = None) -> list[T] | QueuePopError:
        result: list[T] | QueuePopError = self._out_many(
            await self.inner.poll_many(n, timeout=timeout))
        return result

    async def unpoll(self, values: list[T], *, timeout: float | None = None) -> None:
        await self.inner.unpoll([self.codec.encode(v) for v in values], timeout=timeout)

    async def poll_stamped(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run]] | QueuePopError:
        inner: Any = self.inner
        result = await inner.poll_stamped(n, timeout=timeout)
        if isinstance(result, QueuePopError):
            return result
        return self.codec.decode_all(result[0]), result[1]

    async def unpoll_stamped(
        self, values: list[T], runs: list[Run], *, timeout: float | None = None
    ) -> None:
        inner: Any = self.inner
        await inner.unpoll_stamped([self.codec.encode(v) for v in values], runs,
                                   timeout=timeout)

    async def poll_headers(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        inner: Any = self.inner
        result = await inner.poll_headers(n, timeout=timeout)
        if isinstance(result, QueuePopError):
            return result
        return self.codec.decode_all(result[0]), result[1], result[2]

    async def unpoll_headers(
        self, values: list[T], runs: list[Run], headers: list[list[Any]], *,
        timeout: float | None = None,
    ) -> None:
        inner: Any = self.inner
        await inner.unpoll_headers([self.codec.encode(v) for v in values], runs, headers,
                                   timeout=timeout)


class SerializingTopicStorage(SerializingWrapper, Generic[T]):
    """A topic backend storing ``serializer.encode(value)``."""

    def __init__(self, inner: TopicStorage[Any], codec: Codec[T]) -> None:
        super().__init__(inner, codec)
        self.inner: TopicStorage[Any] = inner
        self.codec: Codec[T] = codec

    def _maybe(self, value: Any) -> T | None:
        return None if value is None else self.codec.decode(value)

    def _transition(self, transition: TopicTransition[Any]) -> TopicTransition[T | None]:
        return TopicTransition(self._maybe(transition.result), transition.invalidated)

    def read(self, subscriber: str) -> T | None:
        return self._maybe(self.inner.read(subscriber))

    def read_stream(self, subscriber: str, limit: int | None = None) -> list[T] | None:
        stream = self.inner.read_stream(subscriber, limit)
        return None if stream is None else self.codec.decode_all(stream)

    def base_offset(self) -> int:
        return self.inner.base_offset()

    def end_offset(self) -> int:
        return self.inner.end_offset()

    def elements(self) -> list[T]:
        return self.codec.decode_all(self.inner.elements())

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        return self.inner.subscriptions()

    def snapshot(self) -> dict[str, Any]:
        return self.inner.snapshot()

    def cursor(self, subscriber: str) -> int | None:
        return self.inner.cursor(subscriber)

    def try_publish(self, value: T) -> TopicTransition[int]:
        result: TopicTransition[int] = self.inner.try_publish(  # type: ignore[attr-defined]
            self.codec.encode(value))
        return result

    def try_advance(self, subscriber: str) -> TopicTransition[T | None]:
        return self._transition(self.inner.try_advance(subscriber))  # type: ignore[attr-defined]

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        return await self.inner.subscribe(subscriber, durability, timeout=timeout)

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        return await self.inner.reconnect(subscriber, timeout=timeout)

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        return await self.inner.disconnect(subscriber, timeout=timeout)

    async def publish(self, value: T, *, timeout: float | None = None) -> TopicTransition[int]:
        return await self.inner.publish(self.codec.encode(value), timeout=timeout)

    async def publish_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        inner: Any = self.inner
        result: TopicTransition[int] = await inner.publish_once(
            self.codec.encode(value), msg_id, timeout=timeout)
        return result

    async def publish_headers(
        self, value: T, headers: Headers, msg_id: str | None = None, *,
        timeout: float | None = None,
    ) -> TopicTransition[int]:
        inner: Any = self.inner
        result: TopicTransition[int] = await inner.publish_headers(
            self.codec.encode(value), headers, msg_id, timeout=timeout)
        return result

    async def publish_options(
        self, value: T, options: Any, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        inner: Any = self.inner
        result: TopicTransition[int] = await inner.publish_options(
            self.codec.encode(value), options, timeout=timeout)
        return result

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[T | None]:
        return self._transition(await self.inner.poll(subscriber, timeout=timeout))

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        return await self.inner.advance_to(subscriber, offset, timeout=timeout)

    async def gc(self, *, timeout: float | None = None) -> TopicTransition[int]:
        return await self.inner.gc(timeout=timeout)
