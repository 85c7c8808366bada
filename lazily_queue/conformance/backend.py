"""The backend seam of the conformance engine: adapters, backends and their registry.

See the package docstring (:mod:`lazily_queue.conformance`) for the contract an
implementation must honour.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from ..core.limits import Limits
from ..core.queue import QueuePopError, QueuePushError
from ..reactive import Slot

FLAVORS = ("sync", "async", "threadsafe")
"""How ops reach the cell: the synchronous core (``try_*``), the non-waiting awaitables, or
the synchronous core called from another thread."""


class UnknownBackend(LookupError):
    """No backend is registered under that name; the message lists the known ones."""


class UnsupportedFixtureOp(Exception):
    """The backend cannot perform this fixture op (for example a cluster op on ``local``)."""


@dataclass(frozen=True)
class QueueInitial:
    elements: list[Any]
    capacity: int | None
    closed: bool
    #: The fixture uses message expiry (``ttl`` is the cell's default, seconds).
    expiry: bool = False
    ttl: float | None = None
    #: The queue's limits (``initial.limits``: readers ``bytes`` and ``dropped`` too).
    limits: Limits | None = None


@dataclass(frozen=True)
class SubscriptionRecord:
    durability: str
    connected: bool
    cursor: int


@dataclass(frozen=True)
class TopicInitial:
    base_offset: int
    elements: list[Any]
    subscriptions: dict[str, SubscriptionRecord] = field(default_factory=dict)
    #: Retention by age (seconds), ``None``: none.
    max_age: float | None = None

    #: The topic's retention (``initial.limits``, overflow ``drop_oldest``).
    limits: Limits | None = None


class FixtureClock:
    """The time of a replay (seconds since the epoch), moved only by ``advance_clock``."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class WorkQueueInitial:
    visibility_timeout: int
    max_deliveries: int
    #: ``[base, factor, cap]`` in fixture time units (capability ``scheduling``).
    retry: list[Any] | None = None
    #: The work queue's limits (``initial.limits``: the state key ``dropped`` too).
    limits: Limits | None = None
    #: The fixture pushes with a ttl (capability ``expiry``).
    expiry: bool = False


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


class Backend(ABC):
    """Creates model adapters; used as ``async with backend:`` around one replay."""

    name: str = ""
    flavors: tuple[str, ...] = FLAVORS
    #: The distributed fixture ops :meth:`cluster_op` performs (none on one process).
    cluster_ops: frozenset[str] = frozenset()
    #: Capabilities this backend lacks, each with the reason: a fixture that needs one
    #: is reported as skipped with that reason (see :data:`CAPABILITIES`).
    lacks: Mapping[str, str] = {}
    @property
    def clock(self) -> FixtureClock:
        """The time of the replays: the local cells' clock and the members' wall clock."""
        found: FixtureClock | None = self.__dict__.get("_fixture_clock")
        if found is None:
            found = self.__dict__["_fixture_clock"] = FixtureClock()
        return found

    def advance_clock(self, seconds: float) -> None:
        """Move the replay's time forward (``advance_clock`` ops)."""
        self.clock.now += seconds

    async def __aenter__(self) -> Backend:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Bring the backend up (nodes, connections); default: nothing to do."""

    async def stop(self) -> None:
        """Tear everything down; default: nothing to do."""

    @abstractmethod
    async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter: ...

    @abstractmethod
    async def topic(self, initial: TopicInitial, flavor: str) -> TopicAdapter: ...

    @abstractmethod
    async def work_queue(self, initial: WorkQueueInitial, flavor: str) -> WorkQueueAdapter: ...

    async def restart(self, adapter: TopicAdapter) -> TopicAdapter:
        """Restart the topic losslessly and return the adapter over the restored model."""
        raise UnsupportedFixtureOp(f"backend {self.name!r} cannot restart a topic")

    async def cluster_op(self, op: Mapping[str, Any]) -> None:
        """Perform a distributed fixture op (``kill_leader``, ``partition``, ...)."""
        raise UnsupportedFixtureOp(
            f"backend {self.name!r} has no cluster op {op.get('type')!r}"
        )


CAPABILITIES = {
    "logical_time": "work-queue fixtures with a reap_expired op: leases expire at the times "
                    "the steps give",
    "tail_requeue": "work-queue fixtures where a nacked item waits behind items pushed "
                    "before its nack (it is requeued at the tail)",
    "redelivery_view": "work-queue fixtures whose pending view lists a nacked item "
                       "waiting for its next delivery",
    "atomic_batch": "queue fixtures with a batch op: its pushes reach the readers as one "
                    "invalidation",
    "dedup": "fixtures whose pushes or publishes carry a msg_id (exactly-once producers)",
    "messages": "queue fixtures with a poll_messages op: message ids assigned at commit, "
                "kept when elements are given back",
    "headers": "fixtures whose pushes or publishes carry headers, or that read topic "
               "messages (read_messages)",
    "transactions": "fixtures with a transaction op: its ops commit all or none",
    "replay": "topic fixtures subscribing from a start or seeking",
    "replay_time": "topic fixtures subscribing from or seeking to an enqueue time",
    "groups": "topic fixtures with consumer-group ops",
    "expiry": "fixtures with a ttl, a max_age or an advance_clock op: elements expire on "
              "the replay's clock",
    "scheduling": "work-queue fixtures with priorities, delays, delayed nacks or a retry "
                  "policy",
    "promote_at": "work-queue fixtures with a promote_due op: delayed items made claimable "
                  "at a time the step gives (a replicated work queue promotes only at the "
                  "leader's stamp, by its maintenance or a claim)",
    "queue_options": "queue fixtures whose pushes combine options or are delayed (delay=): "
                     "a delayed element is poppable from its due time on the replay's clock",
    "limits": "queue fixtures declaring limits (max_bytes, drop_oldest): the bytes and "
              "dropped readers",
}
"""What a fixture may need beyond its model's ops (cluster ops aside: see
:attr:`Backend.cluster_ops`); a backend lists the ones it lacks in :attr:`Backend.lacks`."""

BackendFactory = Callable[[], Backend]

_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``factory`` available as ``--backend name``."""
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"backend name must be a non-empty identifier, got {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"a backend named {name!r} is already registered")
    _REGISTRY[name] = factory


def known_backends() -> list[str]:
    return sorted(_REGISTRY)


def create_backend(name: str) -> Backend:
    """A fresh backend instance; :class:`UnknownBackend` lists the registered names."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        known = ", ".join(known_backends()) or "none"
        raise UnknownBackend(f"unknown backend {name!r}; known backends: {known}") from None
    backend = factory()
    if not backend.name:
        backend.name = name
    return backend


def outcome_label(result: Any) -> Any:
    """Map queue error outcomes to their fixture strings; other values pass through."""
    if isinstance(result, (QueuePushError, QueuePopError)):
        return result.value
    return result
