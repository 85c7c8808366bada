"""Conformance engine for the lazily-spec queue-family fixtures (``kind: "Collection"``).

Replays QueueCell, TopicCell and WorkQueueCell fixtures per spec §5 against a named
backend and flavor, and reports the first mismatch (step index, key, expected vs
actual). Unknown models, ops, op fields, top-level, step or expected keys are failures.

Usage::

    result = await replay(load_fixture(path), backend="local", flavor="async")
    assert result.passed, result.failure.describe()

Backends
--------
A backend is registered under a name with :func:`register_backend(name, factory)
<register_backend>`; ``factory()`` returns a fresh :class:`Backend` per replay, and the
engine uses it as ``async with backend:`` (``start()``/``stop()``). Shipped: ``local``
(default), ``local-generic`` (the QueueCell generic storage path), and ``raft1`` /
``raft3`` (real one- and three-node clusters in process; see :mod:`.raft`), ``client``
(the cells of a client of a one-node cluster; see :mod:`.client`), and
``nats`` / ``redis`` (a real broker given by ``--url``; see :mod:`.brokers`). A backend
lists the capabilities it lacks in ``lacks`` (``{name: reason}``, names from
``CAPABILITIES``); a fixture that needs one is reported as skipped with that reason,
never silently. A backend implements::

    class Backend:
        name: str
        flavors: tuple[str, ...]          # subset of ("sync", "async", "threadsafe")
        async def start(self) -> None
        async def stop(self) -> None
        async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter
        async def topic(self, initial: TopicInitial, flavor: str) -> TopicAdapter
        async def work_queue(self, initial: WorkQueueInitial, flavor: str) -> WorkQueueAdapter
        async def restart(self, adapter: TopicAdapter) -> TopicAdapter   # fixture op "restart"
        cluster_ops: frozenset[str]       # the cluster ops it performs (default: none)
        async def cluster_op(self, op: Mapping[str, Any]) -> None
            # any op type the model does not know (kill_leader, partition, heal, ...);
            # raise UnsupportedFixtureOp for ones it does not know either -> failure

Adapters (all op methods are ``async``; the engine awaits them, then awaits
``settle()`` before asserting, so a replicated backend returns from an op once it
committed, and from ``settle()`` once the probed node applied it)::

    class Adapter:
        async def settle(self) -> None      # readers reflect every returned op
        async def dispose(self) -> None

    class QueueAdapter(Adapter):
        def readers(self) -> Mapping[str, Slot]   # head (EMPTY when empty), len,
                                                  # is_empty, is_full, closed
        def elements(self) -> list                # FIFO snapshot, non-reactive
        async def try_push(self, value) -> QueuePushError | None
        async def try_pop(self) -> element | QueuePopError
        async def close(self) -> None
        async def push_batch(self, values: list) -> list[QueuePushError | None]
                                                  # all pushes inside one batch()

    class TopicAdapter(Adapter):
        def reader(self, subscriber: str) -> Slot  # also for ids not subscribed yet
        async def publish(self, value) -> offset
        async def subscribe(self, subscriber: str, durability: str) -> outcome
        async def reconnect(self, subscriber: str) -> outcome
        async def disconnect(self, subscriber: str) -> outcome
        async def delete_subscriber(self, subscriber: str) -> bool
        async def advance(self, subscriber: str) -> element | None
        async def gc(self) -> int
        def base_offset(self) -> int
        def elements(self) -> list
        def subscriptions(self) -> dict[str, {durability, connected, cursor}]
        def read_stream(self, subscriber: str) -> list | None

    class WorkQueueAdapter(Adapter):
        def readers(self) -> Mapping[str, Slot]   # pending_len, is_empty,
                                                  # in_flight_len, dead_letter_len
        async def push(self, value) -> int
        async def claim(self, worker: str, now: int) -> dict | None  # fixture delivery object
        async def ack(self, worker: str, delivery_id: int) -> bool
        async def nack(self, worker: str, delivery_id: int) -> bool
        async def reap_expired(self, now: int) -> int
        def pending(self) -> list[dict]           # {item_id, value, attempts}
        def in_flight(self) -> list[dict]         # ascending delivery_id
        def dead_letters(self) -> list[dict]      # {item_id, value, attempts, reason}

Probes are effects on the reader slots (created with each slot's own context), so a
reader must be a reactive node on the loop that runs the replay.
"""

from . import brokers as _brokers  # noqa: F401  (registers nats and redis)
from . import client as _client  # noqa: F401  (registers client)
from . import local as _local  # noqa: F401  (registers the local backends)
from . import queue as _queue  # noqa: F401  (registers the model runners)
from . import raft as _raft  # noqa: F401  (registers raft1 and raft3)
from . import topic as _topic  # noqa: F401
from . import work_queue as _work_queue  # noqa: F401
from .backend import (
    FLAVORS,
    Adapter,
    Backend,
    BackendFactory,
    QueueAdapter,
    QueueInitial,
    SubscriptionRecord,
    TopicAdapter,
    TopicInitial,
    UnknownBackend,
    UnsupportedFixtureOp,
    WorkQueueAdapter,
    WorkQueueInitial,
    create_backend,
    known_backends,
    register_backend,
)
from .compare import ConformanceFailure, Mismatch
from .engine import ReplayResult, cluster_ops_of, replay, replay_sync
from .fixture import Discovery, Fixture, FixtureError, discover, is_queue_family, load_fixture

__all__ = [
    "FLAVORS",
    "Adapter",
    "Backend",
    "BackendFactory",
    "ConformanceFailure",
    "Discovery",
    "Fixture",
    "FixtureError",
    "Mismatch",
    "QueueAdapter",
    "QueueInitial",
    "ReplayResult",
    "SubscriptionRecord",
    "TopicAdapter",
    "TopicInitial",
    "UnknownBackend",
    "UnsupportedFixtureOp",
    "WorkQueueAdapter",
    "WorkQueueInitial",
    "cluster_ops_of",
    "create_backend",
    "discover",
    "is_queue_family",
    "known_backends",
    "load_fixture",
    "register_backend",
    "replay",
    "replay_sync",
]
