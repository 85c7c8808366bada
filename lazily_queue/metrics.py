"""Prometheus metrics of one node, in a registry of its own.

::

    metrics = NodeMetrics(node)        # before or after node.start()
    body = metrics.render()            # text exposition; content type: metrics.content_type

Operation counters (``lazily_queue_operations_total{family, name, op}``) count the
operations this replica *applies*, so every node of a cluster reports the cluster's
rates. They are derived from the node's event observer: queue events carry their op
(``delay``: a delayed element committed; it counts as a ``push`` when it falls due);
work-queue pushes and claims come from the queue's id counters, acks and nacks from
its settlement receipts, and expired leases are the claims that ended without one;
every topic publish is an event of its own (with or without subscribers).
A deleted object's operation series go with it (a name used again counts from zero),
so names that come and go do not grow the exposition; past ``named_objects`` names of a
kind, an object's series are summed into ``name=""`` (:mod:`.metrics_names`).
``lazily_queue_transactions_total{outcome}`` counts the transactions this replica applied
(``committed``) or refused whole (``aborted``); a committed one's ops are also counted
as operations. Depths,
in-flight, dead letters, consumer lag, Raft term and indexes and member lag are read
from the node at scrape time (:mod:`.metrics_gauges`); fsync latency is a histogram
fed by the driver's fsync observer.

What an SRE alerts on: ``lazily_queue_commit_seconds{op}`` (the time from proposing an
operation on this node to its result, per kind: push, pop, claim, ack, nack, publish,
other), ``lazily_queue_errors_total{kind}`` (no_quorum, commit_timeout,
queued_timeout: a client's op whose timeout passed while it waited for its turn in the
member's op scheduler, storage_unavailable, rejected, settlement_rejected: operations made
on this node, or sent to it by its clients, that failed), refused connections and
handshakes, leader changes, quorum, disk free and the process figures (``process_*``:
resident memory, CPU seconds, open file descriptors, start time). Every series of these
exists from the first scrape (at 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector
from prometheus_client.exposition import generate_latest

from .client.fair import QueuedTimeout
from .core.queue import CLOSE, DELAY, POP, PUSH, UNPOP
from .metrics_gauges import StateCollector
from .metrics_limits import LimitsCollector
from .metrics_names import DEFAULT_NAMED_OBJECTS, OTHER, NamedObjects
from .metrics_tallies import CounterFamily, HistogramFamily, Tally, TallyCollector
from .monitor_documents import render_metrics
from .raft.errors import CommitTimeout, NoQuorum, ProposalRejected, StorageUnavailable
from .replicated import ops
from .replicated.events import (
    Deleted,
    Event,
    QueueChanged,
    Restored,
    TopicPublished,
    TransactionApplied,
    WorkQueueChanged,
)
from .replicated.ops import OpError
from .replicated.work_queues import WorkState

if TYPE_CHECKING:
    from .node import Node

#: The ``family`` label of each object kind.
_FAMILIES = {"queue": "queue", "work_queue": "work", "topic": "topic"}
_QUEUE_OPS = {PUSH: "push", POP: "pop", CLOSE: "close", UNPOP: "unpop", DELAY: "delay"}
_SETTLING = frozenset({ops.WORK_ACK, ops.WORK_NACK, ops.WORK_NACK_DELAYED})
FSYNC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
COMMIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_KIND_OPS = {
    "push": (ops.QUEUE_PUSH, ops.QUEUE_PUSH_ONCE, ops.QUEUE_PUSH_HEADERS, ops.QUEUE_PUSH_TTL,
             ops.QUEUE_PUSH_OPTIONS, ops.WORK_PUSH, ops.WORK_PUSH_ONCE, ops.WORK_PUSH_HEADERS,
             ops.WORK_PUSH_TTL, ops.WORK_PUSH_SCHEDULED, ops.WORK_PUSH_OPTIONS),
    "pop": (ops.QUEUE_POP, ops.QUEUE_POP_MANY, ops.QUEUE_POP_STAMPED, ops.QUEUE_POP_HEADERS),
    "claim": (ops.WORK_CLAIM, ops.WORK_CLAIM_MANY),
    "ack": (ops.WORK_ACK, ops.WORK_SETTLE_MANY),
    "nack": (ops.WORK_NACK, ops.WORK_NACK_DELAYED),
    "publish": (ops.TOPIC_PUBLISH, ops.TOPIC_PUBLISH_ONCE, ops.TOPIC_PUBLISH_HEADERS,
                ops.TOPIC_PUBLISH_OPTIONS),
}
#: The op kind each commit is timed under: every op code has one (``"other"`` for the
#: declarations, give-backs, promotions, administration and cluster ops).
OP_KINDS = {code: "other" for code in ops.OP_NAMES} | {
    code: kind for kind, codes in _KIND_OPS.items() for code in codes}
COMMIT_KINDS = ("push", "pop", "claim", "ack", "nack", "publish", "other")
ERROR_KINDS = ("no_quorum", "commit_timeout", "queued_timeout", "storage_unavailable",
               "rejected", "settlement_rejected", "other")
_ERRORS: tuple[tuple[type[BaseException], str], ...] = (
    (NoQuorum, "no_quorum"), (QueuedTimeout, "queued_timeout"),
    (CommitTimeout, "commit_timeout"),
    (StorageUnavailable, "storage_unavailable"), (ProposalRejected, "rejected"))


class NodeMetrics:
    """Counters, gauges and the fsync histogram of ``node`` (see the module docstring)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, node: Node, *, registry: CollectorRegistry | None = None,
                 namespace: str = "lazily_queue",
                 named_objects: int = DEFAULT_NAMED_OBJECTS) -> None:
        #: The objects shown by name (:mod:`.metrics_names`).
        self.names = NamedObjects(named_objects)
        self.node = node
        self.namespace = namespace
        self.registry = registry if registry is not None else CollectorRegistry()
        ns = namespace
        self.operations = CounterFamily(
            f"{ns}_operations", "Operations applied by this replica", ["family", "name", "op"])
        self.fsync_seconds = HistogramFamily(
            f"{ns}_fsync_seconds", "Duration of each journal fsync", FSYNC_BUCKETS)
        self.commit_seconds = HistogramFamily(
            f"{ns}_commit_seconds",
            "Time from proposing an operation on this node to its result", COMMIT_BUCKETS,
            ["op"])
        self.errors = CounterFamily(
            f"{ns}_errors", "Operations made on this node that failed, by kind", ["kind"])
        self.transactions = CounterFamily(
            f"{ns}_transactions", "Transactions applied by this replica, committed or aborted",
            ["outcome"])
        TallyCollector([self.operations, self.fsync_seconds, self.commit_seconds, self.errors,
                        self.transactions], self.registry)
        self._fsync_buckets = self.fsync_seconds.labels()
        self._transactions = {outcome: self.transactions.labels(outcome)
                              for outcome in ("committed", "aborted")}
        #: The labelled children, looked up once (a lookup costs more than the count).
        self._commit_by_kind = {kind: self.commit_seconds.labels(kind) for kind in COMMIT_KINDS}
        self._errors_by_kind = {kind: self.errors.labels(kind) for kind in ERROR_KINDS}
        self._commit_by_code = {code: self._commit_by_kind[kind] for code, kind in OP_KINDS.items()}
        #: A queue's operations counter by (name, op code), for a lone event; emptied
        #: whenever a series or a shown name goes.
        self._queue_tallies: dict[tuple[str, int], Tally] = {}
        self.registry.register(StateCollector(self))
        self.registry.register(LimitsCollector(self))
        ProcessCollector(registry=self.registry)
        #: Also called with every fsync duration (the monitor's recent window).
        self.fsync_listeners: list[Callable[[float], None]] = []
        #: The figures of the HTTP server serving the metrics, shown as
        #: ``lazily_queue_http_*`` (set by whoever serves them; ``None``: not shown).
        self.http_figures: Callable[[], dict[str, int]] | None = None
        self._work: dict[str, tuple[int, int, int, int | None]] = {}
        node.add_event_observer(self._on_events)
        if node.running:
            self.attach()

    def attach(self) -> None:
        """Hook the running node's driver (fsync timing) and baseline existing state.

        Called by :meth:`render`; call it right after ``node.start()`` to also time the
        first fsyncs.
        """
        if not self.node.running:
            return
        driver = self.node.driver
        if driver.fsync.observer != self._on_fsync:
            driver.fsync.observer = self._on_fsync
            driver.call_observer = self._on_call
            self._baseline()

    def _on_call(self, code: int, seconds: float, result: Any,
                 error: BaseException | None) -> None:
        if error is not None:
            kind = next((k for t, k in _ERRORS if isinstance(error, t)), "other")
            self._errors_by_kind[kind].inc()
            return
        self._commit_by_code.get(code, self._commit_by_kind["other"]).observe(seconds)
        if isinstance(result, OpError):
            self._errors_by_kind["rejected"].inc()
        elif (code in _SETTLING
              and isinstance(result, list)
              and len(result) == 4 and not result[0] and not result[3]):
            self._errors_by_kind["settlement_rejected"].inc()
        elif code == ops.WORK_SETTLE_MANY and isinstance(result, list) and result:
            refused = sum(1 for row in result[0] if not row[0] and not row[2])
            if refused:
                self._errors_by_kind["settlement_rejected"].inc(refused)

    def _on_fsync(self, seconds: float) -> None:
        self._fsync_buckets.observe(seconds)
        for listener in self.fsync_listeners:
            listener(seconds)

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        self.attach()
        return generate_latest(self.registry)

    async def render_async(self) -> bytes:
        """:meth:`render`, formatted off the loop (:func:`.monitor_documents.render_metrics`)."""
        self.attach()
        return await render_metrics(self.registry)

    # -- counting -------------------------------------------------------------------------

    def _baseline(self) -> None:
        """Start counting from the state as it stands (started, or a snapshot installed:
        the series of objects it no longer holds go, as those of a deleted one)."""
        view = self.node.view
        self._work = {name: _work_marks(state) for name, state in view.work_queues.items()}
        held = {"queue": view.queues, "topic": view.topics, "work": view.work_queues}
        self._queue_tallies.clear()
        children = self.operations.children
        for labels in [k for k in children if k[0] in held and k[1] not in held[k[0]]
                       and k[1] != OTHER]:
            del children[labels]
        for family, table in held.items():
            self.names.keep(family, table)

    def _on_events(self, events: Sequence[Event]) -> None:
        if len(events) == 1 and type(event := events[0]) is QueueChanged:
            lone = (event.name, event.op)  # the usual wave: one queue operation
            tally = self._queue_tallies.get(lone)
            if tally is None:
                tally = self._queue_tallies[lone] = self._operation(
                    ("queue", event.name, _QUEUE_OPS.get(event.op, "other")))
            tally.inc()
            return
        works: set[str] = set()
        counts: dict[tuple[str, str, str], int] = {}
        restored = False
        for event in events:
            if isinstance(event, QueueChanged):
                key = ("queue", event.name, _QUEUE_OPS.get(event.op, "other"))
                counts[key] = counts.get(key, 0) + 1
            elif isinstance(event, WorkQueueChanged):
                works.add(event.name)
            elif isinstance(event, TopicPublished):
                key = ("topic", event.name, "publish")
                counts[key] = counts.get(key, 0) + 1
            elif isinstance(event, TransactionApplied):
                self._transactions["committed" if event.committed else "aborted"].inc()
            elif isinstance(event, Deleted):
                family = _FAMILIES.get(event.family, event.family)
                for key in [k for k in counts if k[:2] == (family, event.name)]:
                    del counts[key]
                if family == "work":
                    works.discard(event.name)
                self._forget(family, event.name)
            elif isinstance(event, Restored) and self.node.running:
                restored = True
                break
        for labels, count in counts.items():
            self._operation(labels).inc(count)
        if restored:
            self._baseline()
            return
        if not works or not self.node.running:
            return
        view = self.node.view
        for name in works:
            state = view.work_queue(name)
            if state is not None:
                self._count_work(name, state)

    def _forget(self, family: str, name: str) -> None:
        """Drop the series of a deleted object (a name used again starts from zero)."""
        self._queue_tallies.clear()
        children = self.operations.children
        for labels in [k for k in children if k[:2] == (family, name)]:
            del children[labels]
        if family == "work":
            self._work.pop(name, None)
        self.names.forget(family, name)

    def _operation(self, labels: tuple[str, str, str]) -> Tally:
        """The operations counter's child of ``labels`` (``name=""`` for an object not
        shown by name)."""
        family, name, op = labels
        return self.operations.labels(family, self.names.label(family, name), op)

    def _count_work(self, name: str, state: WorkState) -> None:
        items, deliveries, in_flight, mark = self._work.get(name, (0, 0, 0, None))
        now_items, now_deliveries = state.core.next_ids()
        settled = {"acked": 0, "nacked": 0}
        newest = mark
        for key in reversed(state.receipts):
            if key == mark:
                break
            if newest == mark:
                newest = key
            outcome = state.receipts[key][3]
            settled[outcome] = settled.get(outcome, 0) + 1
        now_in_flight = state.core.in_flight_len()
        claims = now_deliveries - deliveries
        expired = claims - settled["acked"] - settled["nacked"] - (now_in_flight - in_flight)
        for op, count in (("push", now_items - items), ("claim", claims),
                          ("ack", settled["acked"]), ("nack", settled["nacked"]),
                          ("expire", expired)):
            if count > 0:
                self._operation(("work", name, op)).inc(count)
        self._work[name] = (now_items, now_deliveries, now_in_flight, newest)


def _work_marks(state: WorkState) -> tuple[int, int, int, int | None]:
    items, deliveries = state.core.next_ids()
    last = next(reversed(state.receipts), None)
    return items, deliveries, state.core.in_flight_len(), last
