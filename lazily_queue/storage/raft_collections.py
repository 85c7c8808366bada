"""Raft-backed topic and work-queue storages (replicated cores, local views).

Reads show this node's applied replica of the core; operations are proposals that
return once committed and applied here, with the same results and reader masks as the
local core. Work-queue time is the leader's: an operation's ``now`` of ``None`` (the
default) is replaced by the leader's stamp, in milliseconds since the Unix epoch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

from ..core.expiry import optional_ttl_ms, ttl_ms
from ..core.headers import Headers
from ..core.limited_topic import LimitedTopic, check_topic_limits
from ..core.limits import Limits
from ..core.scheduling import RetryPolicy
from ..core.topic import (
    Durability,
    Start,
    SubscribeOutcome,
    TopicCore,
    TopicTransition,
    check_start,
    out_of_range,
)
from ..core.work import (
    DeadLetter,
    Delivery,
    PendingItem,
    Receipt,
    WorkQueueCore,
    WorkReader,
    WorkTransition,
    validate_config,
)
from ..errors import LimitExceeded, UnsupportedOperation
from ..raft.errors import ProposalRejected
from ..replicated import ops as C
from ..replicated.events import TopicChanged, WorkQueueChanged
from .capabilities import StorageCapabilities
from .raft_queue import ReplicatedObject
from .raft_scheduling import RaftWorkScheduling
from .topic import TopicChangeListener
from .work import Settlement, WorkQueueChangeListener

ALL_WORK_READERS = int(
    WorkReader.PENDING_LEN | WorkReader.IS_EMPTY | WorkReader.IN_FLIGHT_LEN
    | WorkReader.DEAD_LETTER_LEN | WorkReader.DELAYED_LEN
)

if TYPE_CHECKING:
    from ..replicated.view import ReadView
    from .raft_groups import GroupRegistrar, RaftGroupStorage
    from .raft_queue import Proposer


class RaftTopicStorage(ReplicatedObject):
    """A replicated TopicCore: the TopicStorage seam, observable."""

    kind = "topic"
    expiry_kind = "topic"
    capabilities = StorageCapabilities(observable=True, lifecycle=True, dedup=True, messages=True,
                                       replay=True, replay_time=True, headers=True,
                                       groups=True, expiry=True)
    #: The storage class of its groups (``None``: :class:`RaftGroupStorage`).
    group_storage: type[RaftGroupStorage] | None = None

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
        self._ids: set[str] = set()
        #: Set by the node: routes a group's events to its storage (groups need it).
        self.register_group: GroupRegistrar | None = None

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
        self._ids.update(ids)
        if self._listener is not None:
            self._listener(ids)

    def on_reset(self) -> None:
        self.on_expired()
        self._ids.update(self._core().subscriptions())
        if self._listener is not None:
            self._listener(frozenset(self._ids))

    # -- operations --------------------------------------------------------------------------

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE,
        *, timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        name = Durability(durability).value
        result = await self._call(C.TOPIC_SUBSCRIBE, [self.name, subscriber, name], timeout)
        return TopicTransition(SubscribeOutcome[result], frozenset())

    async def subscribe_at(
        self, subscriber: str, durability: Durability | str, start: Start, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        args = [self.name, subscriber, Durability(durability).value, check_start(start)]
        result = _in_range(await self._call(C.TOPIC_SUBSCRIBE_AT, args, timeout))
        return TopicTransition(SubscribeOutcome[result], frozenset())

    async def seek(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        result = await self._call(C.TOPIC_SEEK, [self.name, subscriber, offset], timeout)
        return TopicTransition(_in_range(result), frozenset())

    async def subscribe_at_time(
        self, subscriber: str, durability: Durability | str, stamp: int, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        args = [self.name, subscriber, Durability(durability).value, stamp]
        result = _in_range(await self._call(C.TOPIC_SUBSCRIBE_AT_TIME, args, timeout))
        return TopicTransition(SubscribeOutcome[result], frozenset())

    async def seek_time(
        self, subscriber: str, stamp: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        result = await self._call(C.TOPIC_SEEK_TIME, [self.name, subscriber, stamp], timeout)
        return TopicTransition(_in_range(result), frozenset())

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        result = await self._call(C.TOPIC_RECONNECT, [self.name, subscriber], timeout)
        return TopicTransition(bool(result), frozenset())

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        result = await self._call(C.TOPIC_DISCONNECT, [self.name, subscriber], timeout)
        return TopicTransition(bool(result), frozenset())

    async def publish(
        self, value: Any, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        result = await self._published(self._call(C.TOPIC_PUBLISH, [self.name, value], timeout))
        return TopicTransition(int(result), frozenset())

    async def _published(self, call: Awaitable[Any]) -> Any:
        """``call``'s result; a refusal by the retention's ``max_bytes`` as
        :class:`~lazily_queue.errors.LimitExceeded`."""
        try:
            return await call
        except ProposalRejected as exc:
            raise self._limit_exceeded(exc) from None

    def _limit_exceeded(self, exc: ProposalRejected) -> Exception:
        """A publish the retention's ``max_bytes`` refused, as ``LimitExceeded``."""
        if not str(exc).startswith("full:") or self._limits is None:
            return exc
        bound = self._limits.max_bytes
        return LimitExceeded(
            f"topic {self.name!r}: an element larger than its max_bytes limit of {bound} "
            "never fits; store large payloads elsewhere and publish a reference, or raise "
            "the limit", cell=self.name, limit="max_bytes", value=bound)

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

    def headers_of(self, offset: int) -> Headers | None:
        return self._view.topic_headers_of(self.name, offset)

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[Any]:
        result = await self._call(C.TOPIC_ADVANCE, [self.name, subscriber], timeout)
        return TopicTransition(result, frozenset())

    def cursor(self, subscriber: str) -> int | None:
        return self._core().cursor(subscriber)

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        result = await self._call(C.TOPIC_ADVANCE_TO, [self.name, subscriber, offset], timeout)
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


class RaftWorkQueueStorage(ReplicatedObject, RaftWorkScheduling):
    """A replicated WorkQueueCore: the WorkQueueStorage seam, observable, stamped with
    the leader's time when ``now`` is ``None``; ``retry`` is in milliseconds."""

    kind = "work queue"
    expiry_kind = "work_queue"
    capabilities = StorageCapabilities(observable=True, own_clock=True, lifecycle=True,
                                       logical_time=True, dedup=True, scheduling=True,
                                       headers=True, expiry=True)

    def __init__(
        self,
        driver: Proposer,
        view: ReadView,
        name: str,
        *,
        visibility_timeout: int,
        max_deliveries: int,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        ttl: float | None = None,
    ) -> None:
        super().__init__(driver, view, name, timeout=timeout)
        if ttl is not None:
            self.expiry_rules = [ttl_ms(ttl), None]
        self._empty = WorkQueueCore(visibility_timeout, max_deliveries, retry=retry)
        self.retry = retry
        self.visibility_timeout = self._empty.visibility_timeout
        self.max_deliveries = self._empty.max_deliveries
        #: The leader stamps milliseconds.
        self.lease_seconds = self.visibility_timeout / 1000
        self._listener: WorkQueueChangeListener | None = None

    def _declare_op(self) -> tuple[int, list[Any]]:
        if self.retry is not None:
            return C.WORK_DECLARE_RETRY, [self.name, self.visibility_timeout,
                                          self.max_deliveries, self.retry.to_list()]
        return C.WORK_DECLARE, [self.name, self.visibility_timeout, self.max_deliveries]

    def _core(self) -> WorkQueueCore:
        state = self._view.work_queue(self.name)
        return self._empty if state is None else state.core

    # -- view ----------------------------------------------------------------------------

    def pending_len(self) -> int:
        return self._core().pending_len()

    def is_empty(self) -> bool:
        return self._core().is_empty()

    def in_flight_len(self) -> int:
        return self._core().in_flight_len()

    def dead_letter_len(self) -> int:
        return self._core().dead_letter_len()

    def pending(self) -> list[PendingItem]:
        return self._core().pending()

    def in_flight(self) -> list[Delivery]:
        return self._core().in_flight()

    def dead_letters(self) -> list[DeadLetter]:
        return self._core().dead_letters()

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        return self._core().in_flight_by_worker()

    def snapshot(self) -> dict[str, Any]:
        return self._core().snapshot()

    # -- events --------------------------------------------------------------------------

    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        self._listener = listener

    def on_event(self, event: WorkQueueChanged) -> None:
        if self._listener is not None:
            self._listener(event.mask)

    def on_reset(self) -> None:
        if self._listener is not None:
            self._listener(ALL_WORK_READERS)

    # -- operations ----------------------------------------------------------------------

    async def _masked(self, code: int, args: list[Any], timeout: float | None) -> Any:
        result, mask = await self._call(code, [self.name, *args], timeout)
        return WorkTransition(result, mask)

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(C.WORK_PUSH, [value], timeout)
        return transition

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(
            C.WORK_PUSH_ONCE, [msg_id, value], timeout)
        return transition

    async def push_headers(
        self, value: Any, headers: Headers, msg_id: str | None = None, *,
        timeout: float | None = None,
    ) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(
            C.WORK_PUSH_HEADERS, [headers, msg_id, value], timeout)
        return transition

    def headers_of(self, item_id: int) -> Headers | None:
        return self._view.work_headers_of(self.name, item_id)

    async def push_ttl(
        self, value: Any, ttl_ms: int, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(
            C.WORK_PUSH_TTL, [ttl_ms, value], timeout)
        return transition

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[Delivery | None]:
        raw, mask = await self._call(C.WORK_CLAIM, [self.name, worker, now], timeout)
        return WorkTransition(None if raw is None else Delivery(**raw), mask)

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        raw, mask = await self._call(C.WORK_CLAIM_MANY, [self.name, worker, n, now], timeout)
        return WorkTransition([Delivery(**d) for d in raw], mask)

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        count, mask = await self._call(
            C.WORK_RELEASE, [self.name, worker, list(delivery_ids)], timeout
        )
        return WorkTransition(count, mask)

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        """Ack (``"acked"``) or nack (``"nacked"``): the committed settlement's receipt,
        also the one recorded the first time when this worker repeats a settlement
        (``duplicate``), or ``None`` when it was refused."""
        code = C.WORK_ACK if outcome == "acked" else C.WORK_NACK
        _, mask, receipt, duplicate = await self._call(
            code, [self.name, worker, delivery_id], timeout
        )
        proof = None
        if receipt is not None:
            delivery_id, item_id, who, how, settled_at = receipt
            proof = Receipt(self.name, delivery_id, item_id, who, how, settled_at, bool(duplicate))
        return WorkTransition(proof, mask)

    async def settle_many(
        self, worker: str, delivery_ids: list[int], outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[list[Receipt | None]]:
        """Settle several deliveries in one commit, in order: a receipt per id as
        :meth:`settle` gives it (``None`` for a refused one)."""
        results, mask = await self._call(
            C.WORK_SETTLE_MANY, [self.name, worker, outcome, list(delivery_ids)], timeout
        )
        receipts: list[Receipt | None] = []
        for _, receipt, duplicate in results:
            if receipt is None:
                receipts.append(None)
                continue
            delivery_id, item_id, who, how, settled_at = receipt
            receipts.append(Receipt(self.name, delivery_id, item_id, who, how, settled_at,
                                    bool(duplicate)))
        return WorkTransition(receipts, mask)

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(C.WORK_REAP, [now], timeout)
        return transition

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[bool]:
        transition: WorkTransition[bool] = await self._masked(
            C.WORK_EXTEND, [worker, delivery_id, now], timeout
        )
        return transition

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        ids = None if item_ids is None else sorted(item_ids)
        transition: WorkTransition[int] = await self._masked(C.WORK_REDRIVE, [ids], timeout)
        return transition
