"""The model adapters of the conformance engine: what a backend hands the engine for one
queue, topic or work queue, and :class:`UnsupportedFixtureOp` for an op it cannot perform.

See the package docstring (:mod:`lazily_queue.conformance`) for the contract an
implementation must honour.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from ..core.queue import QueuePushError
from ..reactive import Slot


class UnsupportedFixtureOp(Exception):
    """The backend cannot perform this fixture op (for example a cluster op on ``local``)."""


class Adapter(ABC):  # noqa: B024  (no abstract member: both hooks have defaults)
    """What every model adapter offers the engine besides its ops."""

    async def settle(self) -> None:
        """Return once the readers reflect every op that has returned (default: at once)."""

    async def dispose(self) -> None:
        """Release the model (default: nothing to release)."""

    async def transaction(self, ops: list[Mapping[str, Any]]) -> Any:
        """Commit ``ops`` in one transaction (:mod:`.transactions`): the results, or
        ``{"aborted": {"index", "code"}}`` (capability ``transactions``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no transactions")


class QueueAdapter(Adapter):
    @abstractmethod
    def readers(self) -> Mapping[str, Slot[Any]]:
        """``head`` (``EMPTY`` when empty), ``len``, ``is_empty``, ``is_full``, ``closed``."""

    @abstractmethod
    def elements(self) -> list[Any]:
        """FIFO snapshot of the storage (non-reactive)."""

    @abstractmethod
    async def try_push(self, value: Any, msg_id: str | None = None,
                       ttl: float | None = None) -> QueuePushError | None:
        """Push without waiting; with ``msg_id``, a deduplicated push (capability
        ``dedup``); with ``ttl``, one expiring (capability ``expiry``)."""

    def expired(self) -> int:
        """The cell's ``expired`` reader (capability ``expiry``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no message expiry")

    @abstractmethod
    async def try_pop(self) -> Any: ...  # element or QueuePopError

    async def push_headers(self, value: Any, headers: Any,
                           msg_id: str | None = None) -> QueuePushError | None:
        """``try_push`` of an element with headers (capability ``headers``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} keeps no message headers")

    async def push_options(self, value: Any, options: Mapping[str, Any]) -> Any:
        """``try_push`` of an element with several options (``msg_id``, ``ttl``,
        ``headers``, ``delay``) combined (capability ``queue_options``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} does not combine push options")

    def delayed_len(self) -> int:
        """The cell's ``delayed_len`` reader (capability ``queue_options``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no delayed elements")

    async def poll_messages(self, n: int, give_back: int) -> Any:
        """Pop up to ``n`` as messages, give the last ``give_back`` of them back (capability
        ``messages``); ``[{id, value}]`` of those kept (with ``headers`` when they have
        some), or the ``QueuePopError``."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no message ids")

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def push_batch(self, values: list[Any]) -> list[QueuePushError | None]:
        """``try_push`` each value inside one ``batch()``; one outcome per value."""


class TopicAdapter(Adapter):
    @abstractmethod
    def reader(self, subscriber: str) -> Slot[Any]:
        """The subscriber's reader; mintable for ids not subscribed yet."""

    @abstractmethod
    async def publish(self, value: Any, msg_id: str | None = None) -> Any:
        """The offset; with ``msg_id``, a deduplicated publish (capability ``dedup``)."""

    async def publish_headers(self, value: Any, headers: Any,
                              msg_id: str | None = None, ttl: float | None = None) -> Any:
        """:meth:`publish` of an element with headers (capability ``headers``) and/or its
        own ``ttl`` (seconds, capability ``expiry``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} keeps no message headers")

    async def read_messages(self, subscriber: str) -> Any:
        """The unread suffix as ``[{id, value, headers?}]`` (``None`` when unavailable),
        without consuming (capability ``headers``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} keeps no message headers")

    @abstractmethod
    async def subscribe(self, subscriber: str, durability: str) -> Any: ...

    async def subscribe_at(self, subscriber: str, durability: str, start: Any) -> Any:
        """Subscribe with a start (capability ``replay``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} cannot subscribe from a start")

    async def seek(self, subscriber: str, offset: Any) -> Any:
        """Move a cursor within the retained range to an offset (capability ``replay``)
        or a time (a ``datetime``: capability ``replay_time``)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} cannot seek")

    async def group_op(self, op: Mapping[str, Any], settings: Mapping[str, Any]) -> Any:
        """A consumer-group op (``group``, ``group_claim``, ...; capability ``groups``),
        the group opened with ``settings``."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no consumer groups")

    def groups(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """Each group's ``{pending, in_flight, lag}`` (item ids; in flight by member)."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no consumer groups")

    def group_expired(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
        """Each group's count of elements that expired before their first delivery."""
        raise UnsupportedFixtureOp(f"{type(self).__name__} has no consumer groups")

    @abstractmethod
    async def reconnect(self, subscriber: str) -> Any: ...

    @abstractmethod
    async def disconnect(self, subscriber: str) -> Any: ...

    @abstractmethod
    async def delete_subscriber(self, subscriber: str) -> bool:
        """Forget the subscription; ``False`` when the id is unknown."""

    @abstractmethod
    async def advance(self, subscriber: str) -> Any:
        """The consumed element, or ``None`` for a no-op."""

    @abstractmethod
    async def gc(self) -> int: ...

    @abstractmethod
    def base_offset(self) -> int: ...

    @abstractmethod
    def elements(self) -> list[Any]: ...

    @abstractmethod
    def subscriptions(self) -> dict[str, dict[str, Any]]:
        """``{id: {durability, connected, cursor}}`` for every stored record."""

    @abstractmethod
    def read_stream(self, subscriber: str) -> list[Any] | None:
        """The unread suffix, or ``None`` when unavailable (unknown or disconnected)."""


class WorkQueueAdapter(Adapter):
    @abstractmethod
    def readers(self) -> Mapping[str, Slot[Any]]:
        """``pending_len``, ``is_empty``, ``in_flight_len``, ``dead_letter_len``."""

    @abstractmethod
    async def push(self, value: Any, msg_id: str | None = None) -> int:
        """The item id; with ``msg_id``, a deduplicated push (capability ``dedup``)."""

    async def push_scheduled(self, value: Any, priority: int, delay: int | None,
                             now: int | None) -> int:
        """A push at ``priority``, claimable from ``now + delay`` (fixture time units;
        capability ``scheduling``)."""
        raise UnsupportedFixtureOp("this backend has no scheduling")

    async def nack_delayed(self, worker: str, delivery_id: int, delay: int, now: int) -> bool:
        """A nack whose item is claimable again from ``now + delay``."""
        raise UnsupportedFixtureOp("this backend has no scheduling")

    async def push_options(self, value: Any, options: Mapping[str, Any]) -> Any:
        """A push with several options (``msg_id``, ``headers``, ``ttl``, ``priority``,
        ``delay``, ``now``; times in fixture units): the item id, or ``"Full"``."""
        raise UnsupportedFixtureOp("this backend does not combine push options")

    async def declare(self, config: Mapping[str, Any]) -> str | None:
        """The work queue declared again with ``config`` (``visibility_timeout``,
        ``max_deliveries``, ``retry``, ``limits``): ``None``, or ``"Mismatch"``."""
        raise UnsupportedFixtureOp("this backend has no declarations")

    def expired(self) -> int:
        """Items that expired undelivered (capability ``expiry``)."""
        return 0

    def item_headers(self) -> dict[str, dict[str, str]]:
        """The headers of the items held (pending, delayed, in flight, dead), by item id
        (as a string); items without headers left out."""
        return {}

    async def promote_due(self, now: int) -> int:
        raise UnsupportedFixtureOp("this backend has no scheduling")

    def delayed(self) -> list[dict[str, Any]]:
        """``{due, item_id, value, attempts}`` of the delayed items, in due order."""
        return []

    @abstractmethod
    async def claim(self, worker: str, now: int) -> dict[str, Any] | None:
        """The delivery as a fixture object, or ``None`` when nothing is pending."""

    @abstractmethod
    async def ack(self, worker: str, delivery_id: int) -> bool: ...

    @abstractmethod
    async def nack(self, worker: str, delivery_id: int) -> bool: ...

    @abstractmethod
    async def reap_expired(self, now: int) -> int: ...

    @abstractmethod
    def pending(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def in_flight(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def dead_letters(self) -> list[dict[str, Any]]: ...
