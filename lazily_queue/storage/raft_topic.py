"""Raft-backed topic storage: a replicated TopicCore with a local view.

Reads show this node's applied replica; operations are proposals that return once committed
and applied here, with the same results and reader masks as the local core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..core.expiry import optional_ttl_ms
from ..core.headers import Headers
from ..core.limited_topic import LimitedTopic, check_topic_limits
from ..core.limits import Limits
from ..core.push_options import PushOptions
from ..core.topic import (
    Durability,
    Start,
    SubscribeOutcome,
    TopicCore,
    TopicTransition,
    check_start,
    out_of_range,
)
from ..core.topic_expiry import expired_in
from ..core.topic_subscriptions import check_subscriber
from ..core.work import validate_config
from ..errors import LimitExceeded, UnsupportedOperation, shown
from ..names import check_member, check_subscriber_room
from ..raft.errors import ProposalRejected
from ..replicated import ops as C
from ..replicated.events import TopicChanged
from .capabilities import StorageCapabilities
from .replicated_object import ReplicatedObject
from .topic import TopicChangeListener

if TYPE_CHECKING:
    from ..replicated.view import ReadView
    from .raft_groups import GroupRegistrar, RaftGroupStorage
    from .replicated_object import Proposer


class RaftTopicStorage(ReplicatedObject):
    """A replicated TopicCore: the TopicStorage seam, observable."""

    kind = "topic"
    expiry_kind = "topic"
    capabilities = StorageCapabilities(observable=True, lifecycle=True, dedup=True, messages=True,
                                       replay=True, replay_time=True, headers=True,
                                       groups=True, expiry=True, subscriber_delete=True)
    #: The storage class of its groups (``None``: :class:`RaftGroupStorage`).
    group_storage: type[RaftGroupStorage] | None = None
    #: The subscriptions a new one may join (``None``: not checked here; a client's
    #: member checks it); set by the node (:mod:`lazily_queue.names`).
    max_subscribers: int | None = None

    def __init__(
        self, driver: Proposer, view: ReadView, name: str, *, timeout: float = 10.0,
        ttl: float | None = None, max_age: float | None = None,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(driver, view, name, timeout=timeout)
        if ttl is not None or max_age is not None:
            self.expiry_rules = [optional_ttl_ms(ttl), optional_ttl_ms(max_age, "max_age")]
        self._limits = None if limits is None else check_topic_limits(limits)
        self._listener: TopicChangeListener | None = None
        self._empty: TopicCore[Any] = TopicCore()
        #: The subscriber ids the topic held (and some it held lately): on a reset their
        #: readers are told, with those of the ids it holds now.
        self._ids: set[str] = set()
        self._ids_bound = 64  # then twice the ids held at the last look, and 64
        #: Set by the node: routes a group's events to its storage (groups need it).
        self.register_group: GroupRegistrar | None = None
        #: How many times the whole state was installed anew (a client's mirror fetched
        #: from a member it linked to, which may have applied less than the last one).
        self.resets = 0

    def open_group(
        self, topic: str, group: str, *, visibility_timeout: float, max_deliveries: int,
        start: Start = "tail", clock: Callable[[], float] | None = None,
    ) -> RaftGroupStorage:
        """The storage of group ``group`` (declared on the cluster by its first operation
        or ``declare()``); ``visibility_timeout`` in seconds, leases on the leader's clock."""
        from .raft_groups import RaftGroupStorage

        if clock is not None:
            raise ValueError(f"{self.name}: a replicated group's leases run on the leader's "
                             "clock; open it without clock=")
        if self.register_group is None:
            raise UnsupportedOperation(
                f"{self.name}: this topic's backend routes no group events; open the group "
                "on a node's topic (Node.topic(name).group(...))")
        visibility_timeout, max_deliveries = validate_config(visibility_timeout, max_deliveries)
        storage = (self.group_storage or RaftGroupStorage)(
            self._driver, self._view, self.name, group,
            visibility_timeout=round(visibility_timeout * 1000),
            max_deliveries=max_deliveries, start=start, timeout=self.timeout)
        return self.register_group(storage)

    def _declare_op(self) -> tuple[int, list[Any]]:
        if self._limits is not None:
            return C.TOPIC_DECLARE_LIMITED, [self.name, self._limits.doc()]
        return C.TOPIC_DECLARE, [self.name]

    def declared_limits(self) -> Limits | None:
        """The limits this storage declares the topic with."""
        return self._limits

    def limited_topic(self) -> LimitedTopic[Any] | None:
        """The topic as applied here when it has retention limits, else ``None``."""
        topic = self._view.topic(self.name)
        return topic if isinstance(topic, LimitedTopic) else None

    def _core(self) -> TopicCore[Any]:
        topic = self._view.topic(self.name)
        return self._empty if topic is None else topic

    # -- view ----------------------------------------------------------------------------

    def read(self, subscriber: str) -> Any:
        return self._core().read(subscriber)

    def read_stream(self, subscriber: str, limit: int | None = None) -> list[Any] | None:
        return self._core().read_stream(subscriber, limit)

    def stamp_of(self, offset: int) -> int:
        return self._core().stamp_of(offset)

    def base_offset(self) -> int:
        return self._core().base_offset()

    def end_offset(self) -> int:
        return self._core().end_offset()

    def elements(self) -> list[Any]:
        return self._core().elements()

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        return self._core().subscriptions()

    def snapshot(self) -> dict[str, Any]:
        return self._core().snapshot()

    # -- events --------------------------------------------------------------------------

    def set_change_listener(self, listener: TopicChangeListener | None) -> None:
        self._listener = listener

    def on_event(self, event: TopicChanged) -> None:
        ids = event.subscribers
        known = self._ids
        known.update(ids)
        if self._listener is not None:
            self._listener(ids)
        if len(known) > self._ids_bound:
            # Ids that came and went: their readers were told when they went.
            self._keep_ids(set(self._core().subscriptions()))

    def on_reset(self) -> None:
        self.resets += 1
        self.on_expired()
        now = set(self._core().subscriptions())
        before = self._ids
        self._keep_ids(now)
        if self._listener is not None:
            self._listener(frozenset(before | now))

    def _keep_ids(self, ids: set[str]) -> None:
        self._ids = ids
        self._ids_bound = 2 * len(ids) + 64

    # -- operations --------------------------------------------------------------------------

    def _of(self, subscriber: str, *rest: Any) -> list[Any]:
        """An op's arguments: this topic's name, ``subscriber`` (a ``str``, else
        ``TypeError`` here, as on a local topic) and ``rest``."""
        return [self.name, check_subscriber(subscriber), *rest]

    def _admit(self, subscriber: str) -> None:
        """Refuse a subscriber name over the length rule, or a new subscription beyond
        ``max_subscribers`` (:mod:`lazily_queue.names`), before proposing."""
        check_subscriber(subscriber)
        check_member(subscriber, "subscriber name")
        if self.max_subscribers is not None and isinstance(subscriber, str):
            check_subscriber_room(self._view, self.name, subscriber, self.max_subscribers)

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE,
        *, timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        self._admit(subscriber)
        name = Durability(durability).value
        result = await self._call(C.TOPIC_SUBSCRIBE, self._of(subscriber, name), timeout)
        return TopicTransition(SubscribeOutcome[result], frozenset())

    async def subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        self._admit(subscriber)
        args = self._of(subscriber, Durability(durability).value, check_start(start))
        result = _in_range(await self._call(C.TOPIC_SUBSCRIBE_AT, args, timeout))
        return TopicTransition(SubscribeOutcome[result], frozenset())

    async def seek(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError(f"offset must be an int, got {shown(offset)}")  # as a local topic
        result = await self._call(C.TOPIC_SEEK, self._of(subscriber, offset), timeout)
        return TopicTransition(_in_range(result), frozenset())

    async def subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        self._admit(subscriber)
        args = self._of(subscriber, Durability(durability).value, stamp)
        result = _in_range(await self._call(C.TOPIC_SUBSCRIBE_AT_TIME, args, timeout))
        return TopicTransition(SubscribeOutcome[result], frozenset())

    async def seek_time(
        self, subscriber: str, stamp: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        result = await self._call(C.TOPIC_SEEK_TIME, self._of(subscriber, stamp), timeout)
        return TopicTransition(_in_range(result), frozenset())

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        result = await self._call(C.TOPIC_RECONNECT, self._of(subscriber), timeout)
        return TopicTransition(bool(result), frozenset())

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        result = await self._call(C.TOPIC_DISCONNECT, self._of(subscriber), timeout)
        return TopicTransition(bool(result), frozenset())

    async def delete_subscriber(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        result = await self._call(C.TOPIC_DELETE_SUBSCRIBER, self._of(subscriber), timeout)
        return TopicTransition(bool(result), frozenset())

    async def publish(
        self, value: Any, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        result = await self._published(self._call(C.TOPIC_PUBLISH, [self.name, value], timeout))
        return TopicTransition(int(result), frozenset())

    async def publish_many(
        self, values: list[Any], *, timeout: float | None = None
    ) -> list[TopicTransition[int]]:
        """Publish ``values`` proposed together (see ``_call_many``); a value the
        cluster would refuse refuses them all, before any is proposed."""
        offsets = await self._published(self._call_many(
            C.TOPIC_PUBLISH, lambda value: [self.name, value], values, timeout))
        return [TopicTransition(int(offset), frozenset()) for offset in offsets]

    def check_values(self, values: list[Any]) -> None:
        """Refuse a batch of publishes with a value the cluster would refuse."""
        self.check_all(C.TOPIC_PUBLISH, lambda value: [self.name, value], values)

    async def _published(self, call: Awaitable[Any]) -> Any:
        """``call``'s result; a refusal by the retention's ``max_bytes`` as
        :class:`~lazily_queue.errors.LimitExceeded`."""
        try:
            return await call
        except ProposalRejected as exc:
            raise self._limit_exceeded(exc) from None

    def _limit_exceeded(self, exc: ProposalRejected) -> Exception:
        """A publish the retention limits refused, as ``LimitExceeded``."""
        text = str(exc)
        if not text.startswith("full:") or self._limits is None:
            return exc
        limit = "max_bytes" if "max_bytes" in text else "max_length"
        bound = self._limits.max_bytes if limit == "max_bytes" else self._limits.max_length
        return LimitExceeded(text[len("full: "):], cell=self.name, limit=limit, value=bound)

    async def publish_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        result = await self._call(C.TOPIC_PUBLISH_ONCE, [self.name, msg_id, value], timeout)
        return TopicTransition(int(result), frozenset())

    async def publish_headers(
        self, value: Any, headers: Headers, msg_id: str | None = None, *,
        timeout: float | None = None,
    ) -> TopicTransition[int]:
        args = [self.name, headers, msg_id, value]
        result = await self._published(self._call(C.TOPIC_PUBLISH_HEADERS, args, timeout))
        return TopicTransition(int(result), frozenset())

    async def publish_options(
        self, value: Any, options: PushOptions, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        """A publish with ``options`` (``TOPIC_PUBLISH_OPTIONS``)."""
        args = [self.name, options.to_map(), value]
        result = await self._published(self._call(C.TOPIC_PUBLISH_OPTIONS, args, timeout))
        return TopicTransition(int(result), frozenset())

    def expired_offsets(self, first: int, end: int) -> frozenset[int]:
        """The offsets in ``first..end-1`` expired at the stamp of the last entry applied
        here (what a batch read leaves out)."""
        rules = self._view.expiry.get(("topic", self.name))
        topic = self._view.topic(self.name)
        if rules is None or topic is None:
            return frozenset()
        return expired_in(topic, rules, first, end, self._view.now)

    def headers_of(self, offset: int) -> Headers | None:
        return self._view.topic_headers_of(self.name, offset)

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[Any]:
        result = await self._call(C.TOPIC_ADVANCE, self._of(subscriber), timeout)
        return TopicTransition(result, frozenset())

    def cursor(self, subscriber: str) -> int | None:
        return self._core().cursor(subscriber)

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        result = await self._call(C.TOPIC_ADVANCE_TO, self._of(subscriber, offset), timeout)
        return TopicTransition(result, frozenset())

    async def restore(
        self, snapshot: dict[str, Any], *, timeout: float | None = None
    ) -> None:
        """Replace the topic's whole state with ``snapshot`` (administration, seeding)."""
        await self._call(C.TOPIC_RESTORE, [self.name, snapshot], timeout)

    async def gc(self, *, timeout: float | None = None) -> TopicTransition[int]:
        result = await self._call(C.TOPIC_GC, [self.name], timeout)
        return TopicTransition(int(result), frozenset())


def _in_range(result: list[Any]) -> Any:
    """The result of a positioned op, or its :class:`OffsetOutOfRange` raised."""
    if result[0] == "out_of_range":
        raise out_of_range(result[1], result[2], result[3])
    return result[1]
