"""The backend seam of the conformance engine: backends, the models' initial states and
the registry (the adapters, in :mod:`.adapters`, are re-exported here).

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
from .adapters import Adapter as Adapter  # the adapters, importable from here as before
from .adapters import QueueAdapter as QueueAdapter
from .adapters import TopicAdapter as TopicAdapter
from .adapters import UnsupportedFixtureOp as UnsupportedFixtureOp
from .adapters import WorkQueueAdapter as WorkQueueAdapter

FLAVORS = ("sync", "async", "threadsafe")
"""How ops reach the cell: the synchronous core (``try_*``), the non-waiting awaitables, or
the synchronous core called from another thread."""


class UnknownBackend(LookupError):
    """No backend is registered under that name; the message lists the known ones."""


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
    "subscriber_delete": "topic fixtures with a delete_subscriber op",
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
