"""The publishing half of :class:`~.topic.TopicCell`: the plain publish, publishes with
options (a producer ``msg_id``, ``headers``, a per-message ``ttl``, combined), the wait
for room on a topic whose limits ``reject``, and the headers of what was published."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from ..core.headers import view
from ..core.push_options import PushOptions
from ..core.topic import TopicTransition
from ..core.topic_options import publish_options
from ..errors import LimitExceeded, OffsetOutOfRange, UnsupportedOperation
from ..reactive import Context
from ..storage.capabilities import StorageCapabilities
from ..storage.topic import SyncTopicStorage, TopicStorage, as_dedup_topic, as_headers_topic
from .expiry import no_expiry
from .group import GroupCell
from .loop_owner import LoopOwned
from .once import no_dedup
from .push_checks import values_of
from .topic_limits import TopicLimits

T = TypeVar("T")
R = TypeVar("R")


class TopicPublishes(TopicLimits, LoopOwned, Generic[T]):
    """Mixed into :class:`~.topic.TopicCell` (which sets the attributes below); the
    limits' figures, readers and wait for room come with it."""

    name: str
    ctx: Context
    _storage: TopicStorage[T]
    _caps: StorageCapabilities
    _sync: SyncTopicStorage[T] | None
    _group_cells: dict[str, GroupCell]
    _raise_if_stopped: Callable[[], None]

    def _apply(self, transition: TopicTransition[R]) -> R:
        raise NotImplementedError

    def try_publish(self, value: T) -> int:
        raise NotImplementedError

    async def publish(self, value: T, *, msg_id: str | None = None,
                      ttl: float | None = None, headers: Mapping[str, str] | None = None,
                      wait: bool = True) -> int:
        """Append ``value`` for every subscriber; returns its offset.

        With ``msg_id`` (capability ``dedup``) it applies once: while the id is in the
        backend's dedup window a repeat appends nothing and returns the first offset.
        With ``ttl`` (seconds, capability ``expiry``) the element expires that long after
        its publish, or earlier by the topic's own ``ttl=`` / ``max_age=`` (the earlier
        deadline wins): no subscriber is handed it once expired. With ``headers``
        (capability ``headers``; checked as a queue's are) the element carries them:
        :meth:`stream_messages` reads them as ``Message.headers``. The options combine.
        On a topic whose limits ``reject``, a publish with no room waits until elements
        leave (GC of what every durable subscriber read, expiry); ``wait=False`` raises
        :class:`~lazily_queue.errors.LimitExceeded` instead.
        """
        self._own()
        if msg_id is not None or ttl is not None or headers is not None:
            options = publish_options(msg_id, headers, ttl)
            if not options.is_plain():
                return await self._publish_options(value, options, wait)
        if self._group_cells:
            await self._declare_groups()
        try:
            if self._sync is not None:
                return self.try_publish(value)
            return self._apply(await self._storage.publish(value))
        except LimitExceeded as exc:
            size = self._may_wait(value) if wait else None
            if size is None:
                raise self._named(exc) from None
        await self._wait_room(size, self._raise_if_stopped, self.ctx)
        return await self.publish(value, wait=wait)

    async def publish_many(self, values: Iterable[T], *, wait: bool = True) -> list[int]:
        """Publish every value in order, without options; returns their offsets.

        Over a replicated backend (a member's or a client's) they are proposed together,
        in runs of :data:`~lazily_queue.storage.runs.MANY_AT_ONCE`, so they commit in
        order in one entry where they fit.
        Elsewhere, and on a topic with limits, they are published one after another as
        :meth:`publish` does (waiting for room unless ``wait=False``). A value the
        cluster refuses (``UnsupportedValue``, ``MessageTooLarge``) refuses them all
        before any is sent; another failure raises once the publishes under way have
        ended: the values before it, or proposed with it, may be published.
        """
        self._own()
        pending = values_of(values, "publish")
        together = getattr(self._storage, "publish_many", None)
        if self._sync is not None or together is None or self.limits() is not None:
            check = getattr(self._storage, "check_values", None)
            if check is not None:
                check(pending)
            return [await self.publish(value, wait=wait) for value in pending]
        if self._group_cells:
            await self._declare_groups()
        transitions: list[TopicTransition[int]] = await together(pending)
        return [self._apply(transition) for transition in transitions]

    async def _publish_options(self, value: T, options: PushOptions, wait: bool) -> int:
        storage: Any = self._storage
        kind = type(self._storage).__name__
        if options.ttl_ms is not None and not self._caps.expiry:
            raise no_expiry(self.name, self._storage, "publish")
        if options.headers is not None and not self._caps.headers:
            raise UnsupportedOperation(
                f"{self.name}: {kind} does not keep message headers; publish without "
                "headers= (or carry them in the value)")
        if options.msg_id is not None and as_dedup_topic(self._storage) is None:
            raise no_dedup(self.name, self._storage, "publish")
        if options.ttl_ms is not None and not hasattr(storage, "publish_options"):
            raise UnsupportedOperation(f"{self.name}: {kind} cannot give a publish its own "
                                       "ttl; publish without ttl")
        if self._group_cells:
            await self._declare_groups()
        try:
            transition: TopicTransition[int]
            if options.ttl_ms is not None:
                transition = await storage.publish_options(value, options)
            elif options.headers is not None:
                transition = await storage.publish_headers(value, options.headers,
                                                           options.msg_id)
            else:
                transition = await storage.publish_once(value, options.msg_id)
            return self._apply(transition)
        except LimitExceeded as exc:
            size = self._may_wait(value) if wait else None
            if size is None:
                raise self._named(exc) from None
        await self._wait_room(size, self._raise_if_stopped, self.ctx)
        return await self._publish_options(value, options, wait)

    def headers_of(self, offset: int) -> Mapping[str, str]:
        """The headers the retained element at ``offset`` was published with (read-only;
        empty when none)."""
        storage = as_headers_topic(self._storage)
        return view(None if storage is None else storage.headers_of(offset))

    async def _declare_groups(self) -> None:
        """Declare the groups opened here and not declared yet, so they get this element
        (one whose start is out of range is dropped; its cell raises when used)."""
        for group in list(self._group_cells.values()):
            if not group.declared:
                with contextlib.suppress(OffsetOutOfRange):
                    await group.declare()

