"""Prometheus metrics of one node, in a registry of its own.

::

    metrics = NodeMetrics(node)        # before or after node.start()
    body = metrics.render()            # text exposition; content type: metrics.content_type

Operation counters (``lazily_queue_operations_total{family, name, op}``) count the
operations this replica *applies*, so every node of a cluster reports the cluster's
rates. They are derived from the node's event observer: queue events carry their op;
work-queue pushes and claims come from the queue's id counters, acks and nacks from
its settlement receipts, and expired leases are the claims that ended without one;
every topic publish is an event of its own (with or without subscribers). Depths,
in-flight, dead letters, consumer lag, Raft term and indexes and member lag are read
from the node at scrape time; fsync latency is a histogram fed by the driver's fsync
observer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from .core.queue import CLOSE, POP, PUSH, UNPOP
from .replicated.events import Event, QueueChanged, Restored, TopicPublished, WorkQueueChanged
from .replicated.work_queues import WorkState
from .status import node_status

if TYPE_CHECKING:
    from .node import Node

_QUEUE_OPS = {PUSH: "push", POP: "pop", CLOSE: "close", UNPOP: "unpop"}
FSYNC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class NodeMetrics:
    """Counters, gauges and the fsync histogram of ``node`` (see the module docstring)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, node: Node, *, registry: CollectorRegistry | None = None,
                 namespace: str = "lazily_queue") -> None:
        self.node = node
        self.namespace = namespace
        self.registry = registry if registry is not None else CollectorRegistry()
        self.operations = Counter(
            "operations", "Operations applied by this replica",
            ["family", "name", "op"], namespace=namespace, registry=self.registry,
        )
        self.fsync_seconds = Histogram(
            "fsync_seconds", "Duration of each journal fsync",
            namespace=namespace, buckets=FSYNC_BUCKETS, registry=self.registry,
        )
        self.registry.register(_StateCollector(self))
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
        if driver.fsync.observer is not self.fsync_seconds.observe:
            driver.fsync.observer = self.fsync_seconds.observe
            self._baseline()

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        self.attach()
        return generate_latest(self.registry)

    # -- counting -------------------------------------------------------------------------

    def _baseline(self) -> None:
        view = self.node.view
        self._work = {name: _work_marks(state) for name, state in view.work_queues.items()}

    def _on_events(self, events: Sequence[Event]) -> None:
        works: set[str] = set()
        for event in events:
            if isinstance(event, QueueChanged):
                self.operations.labels("queue", event.name,
                                       _QUEUE_OPS.get(event.op, "other")).inc()
            elif isinstance(event, WorkQueueChanged):
                works.add(event.name)
            elif isinstance(event, TopicPublished):
                self.operations.labels("topic", event.name, "publish").inc()
            elif isinstance(event, Restored) and self.node.running:
                self._baseline()
                return
        if not works or not self.node.running:
            return
        view = self.node.view
        for name in works:
            state = view.work_queue(name)
            if state is not None:
                self._count_work(name, state)

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
        label = self.operations.labels
        for op, count in (("push", now_items - items), ("claim", claims),
                          ("ack", settled["acked"]), ("nack", settled["nacked"]),
                          ("expire", expired)):
            if count > 0:
                label("work", name, op).inc(count)
        self._work[name] = (now_items, now_deliveries, now_in_flight, newest)


def _work_marks(state: WorkState) -> tuple[int, int, int, int | None]:
    items, deliveries = state.core.next_ids()
    last = next(reversed(state.receipts), None)
    return items, deliveries, state.core.in_flight_len(), last


class _StateCollector(Collector):
    """Gauges read from the node at scrape time."""

    def __init__(self, metrics: NodeMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        node = self.metrics.node
        if not node.running:
            return
        ns = self.metrics.namespace
        status = node_status(node)
        info = GaugeMetricFamily(f"{ns}_node_info", "This node (value 1)",
                                 labels=["node", "cluster", "state", "leader"])
        info.add_metric([status["node"], status["cluster"], status["state"],
                         status["leader"] or ""], 1)
        yield info
        for key, help_text in (
            ("term", "Current Raft term"),
            ("commit_index", "Highest log index known committed"),
            ("last_applied", "Highest log index applied to the state machine"),
            ("log_last_index", "Last index in the local log"),
            ("pending_proposals", "Proposals from this node awaiting commit"),
        ):
            yield GaugeMetricFamily(f"{ns}_raft_{key}", help_text, value=status[key])
        yield GaugeMetricFamily(f"{ns}_raft_is_leader", "1 on the leader",
                                value=int(status["state"] == "leader"))
        yield GaugeMetricFamily(f"{ns}_raft_has_quorum", "1 while a majority is reachable",
                                value=int(status["has_quorum"]))
        yield GaugeMetricFamily(
            f"{ns}_journal_writable",
            "0 while the disk refuses journal writes (the node acknowledges nothing)",
            value=int(status["disk"]["writable"]))
        yield CounterMetricFamily(
            f"{ns}_raft_leader_changes", "Times this node became or stopped being leader",
            value=node.driver.replica.leader_changes,
        )
        lag = GaugeMetricFamily(f"{ns}_member_lag_entries",
                                "Log entries a member trails the leader by (leader only)",
                                labels=["member"])
        up = GaugeMetricFamily(f"{ns}_member_connected", "1 while linked", labels=["member"])
        for member in status["members"]:
            up.add_metric([member["id"]], int(member["connected"]))
            if member["lag"] is not None:
                lag.add_metric([member["id"]], member["lag"])
        yield lag
        yield up
        yield from _depths(ns, status)


def _depths(ns: str, status: dict[str, Any]) -> Iterator[Metric]:
    depth = GaugeMetricFamily(f"{ns}_queue_depth", "Elements in a queue", labels=["name"])
    for name, q in status["queues"].items():
        depth.add_metric([name], q["len"])
    yield depth
    families = {
        "pending": GaugeMetricFamily(f"{ns}_work_pending", "Pending items (consumer lag)",
                                     labels=["name"]),
        "in_flight": GaugeMetricFamily(f"{ns}_work_in_flight", "Leased items", labels=["name"]),
        "dead_letters": GaugeMetricFamily(f"{ns}_work_dead_letters", "Dead-lettered items",
                                          labels=["name"]),
    }
    for name, w in status["work_queues"].items():
        for key, family in families.items():
            family.add_metric([name], w[key])
    yield from families.values()
    retained = GaugeMetricFamily(f"{ns}_topic_retained", "Retained topic elements",
                                 labels=["name"])
    lag = GaugeMetricFamily(f"{ns}_topic_consumer_lag", "Unread elements of a subscriber",
                            labels=["name", "subscriber"])
    for name, t in status["topics"].items():
        retained.add_metric([name], t["retained"])
        for sid, sub in t["subscribers"].items():
            lag.add_metric([name, sid], sub["lag"])
    yield retained
    yield lag
