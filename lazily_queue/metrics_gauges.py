"""The gauges of :class:`~lazily_queue.metrics.NodeMetrics`, read from the node at scrape
time: identity and build (constant labels only), Raft state, members, disk, listener
refusals, the connections of the HTTP server serving the metrics (where
``NodeMetrics.http_figures`` is set), the producer dedup window, the bounded bookkeeping
tables of the applied state (each size with its bound as a ``_limit`` gauge) and the
depths of every queue, work queue and topic.

No label value changes while a node runs (only the set of members, queues and
subscribers grows or shrinks): the Raft role is ``lazily_queue_raft_state{state}`` with
one series per possible state (1 for the current one), the leader is the number
``lazily_queue_raft_leader_id`` (-1 while there is none). The consumer lag is given for
a topic's most lagging subscribers only, as the status lists them
(:data:`~lazily_queue.status.MAX_SUBSCRIBERS_SHOWN`), and of all topics the
``named_objects`` most lagging only, so client-chosen subscriber ids cannot multiply the
series; and past ``named_objects`` objects of a kind the others are
summed (:mod:`.metrics_names`), so client-chosen object names cannot either.
``lazily_queue_topic_pinned_entries{name, subscriber}`` names, per topic shown by name,
the durable subscriber holding its retention frontier and how many elements it keeps
from being trimmed (:func:`~lazily_queue.subscriber_listing.retention_holder`).
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .metrics_names import OTHER, NamedObjects
from .status import bare_status, groups_of, subscribers_behind
from .subscriber_listing import retention_holder
from .vitals import disk_usage, version

if TYPE_CHECKING:
    from .metrics import NodeMetrics
    from .replicated.view import ReadView

RAFT_STATES = ("leader", "follower", "candidate")


class StateCollector(Collector):
    """Gauges read from the node at scrape time (see the module docstring)."""

    def __init__(self, metrics: NodeMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        node = self.metrics.node
        ns = self.metrics.namespace
        info = GaugeMetricFamily(f"{ns}_node_info", "This node (value 1)",
                                 labels=["node", "cluster"])
        info.add_metric([node.node_id, node.cluster], 1)
        yield info
        build = GaugeMetricFamily(f"{ns}_build_info", "The running build (value 1)",
                                  labels=["version", "python"])
        build.add_metric([version(), sys.version.split()[0]], 1)
        yield build
        if self.metrics.http_figures is not None:
            yield from _http(ns, self.metrics.http_figures())
        if not node.running:
            return
        status = bare_status(node, objects=False)
        view = node.view
        yield from _raft(ns, status, node.driver.replica.leader_changes)
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
        disk = disk_usage(node.data_dir)
        for key, help_text in (("free_bytes", "Free bytes on the data directory's disk"),
                               ("total_bytes", "Size of the data directory's disk")):
            if disk[key] is not None:
                yield GaugeMetricFamily(f"{ns}_disk_{key}", help_text, value=disk[key])
        listener = status.get("listener") or {}
        yield CounterMetricFamily(
            f"{ns}_refused_connections",
            "Connections closed at once over the listener's handshake caps",
            value=listener.get("refused_connections", 0))
        yield CounterMetricFamily(
            f"{ns}_evicted_connections",
            "Connections closed in their handshake to make room for another source's",
            value=listener.get("evicted_connections", 0))
        yield CounterMetricFamily(
            f"{ns}_refused_handshakes",
            "Incoming links refused in their handshake (wrong secret or cluster, unknown "
            "member, ...)", value=listener.get("refused_handshakes", 0))
        yield CounterMetricFamily(
            f"{ns}_deduplicated_pushes",
            "Pushes and publishes with a msg_id still in the dedup window, answered with "
            "the first result without applying", value=view.deduplicated_pushes)
        yield GaugeMetricFamily(f"{ns}_dedup_window_entries",
                                "Producer message ids held in the dedup window",
                                value=view.dedup_window_len)
        yield from _tables(ns, view.table_sizes())
        names = self.metrics.names
        yield from _depths(ns, view, names)
        yield from _summed(ns, view, names)
        yield from _expiry(ns, view.expiry_counts(), names)


#: The HTTP server's figures (:meth:`~lazily_queue.http_gate.Connections.stats`):
#: (key, metric name, counter, help).
HTTP_FIGURES = (
    ("open_connections", "http_open_connections", False,
     "Connections open to the node's HTTP server (status page, metrics, admin API)"),
    ("max_connections", "http_open_connections_limit", False,
     "The bound of {ns}_http_open_connections"),
    ("max_per_source", "http_connections_per_source_limit", False,
     "The most HTTP connections open from one source (IP address)"),
    ("refused_connections", "http_refused_connections", True,
     "HTTP connections closed at once over the caps"),
    ("evicted_connections", "http_evicted_connections", True,
     "HTTP connections closed to make room for another source's"),
    ("stalled_connections", "http_stalled_connections", True,
     "HTTP connections closed because their reader did not take the answers"),
)


def _http(ns: str, figures: dict[str, int]) -> Iterator[Metric]:
    for key, name, counter, help_text in HTTP_FIGURES:
        family = CounterMetricFamily if counter else GaugeMetricFamily
        yield family(f"{ns}_{name}", help_text.format(ns=ns), value=figures[key])


def _expiry(ns: str, counts: dict[tuple[str, str], tuple[int, int]],
            names: NamedObjects) -> Iterator[Metric]:
    expired = CounterMetricFamily(
        f"{ns}_expired", "Elements that expired and left a cell undelivered",
        labels=["cell", "kind"])
    unread = CounterMetricFamily(
        f"{ns}_expired_unread",
        "Unread elements topic subscribers lost to the topic's age limit (their gaps)",
        labels=["cell", "kind"])
    summed: dict[tuple[str, ...], dict[str, tuple[int, ...]]] = {}
    for (kind, name), figures in sorted(counts.items()):
        key = (names.label(kind, name), kind)
        if key[0] == OTHER:
            summed.setdefault((kind,), {})[name] = figures
            continue
        expired.add_metric(list(key), figures[0])
        if kind == "topic":
            unread.add_metric(list(key), figures[1])
    for (kind,), total in names.summed.totals("expired", summed, 2).items():
        expired.add_metric([OTHER, kind], total[0])
        if kind == "topic":
            unread.add_metric([OTHER, kind], total[1])
    yield expired
    yield unread


#: Gauges of the bounded tables: (name, table, figure, help); ``{name}_limit`` is the
#: table's bound where ``limit`` is given.
TABLE_GAUGES = (
    ("client_sessions", "client_sessions", "count",
     "Client sessions held (past the limit the client holding the most gives up its least "
     "recently seen)"),
    ("client_session_clients", "client_sessions", "clients",
     "Clients holding a client session"),
    ("client_sessions_most_per_client", "client_sessions", "most_per_client",
     "The most client sessions one client holds (its bound is the table's, "
     "lazily_queue_client_sessions_limit: there, this client gives one up for each opened)"),
    ("ended_sessions", "ended_sessions", "count",
     "Ended client session ids kept (past the limit the oldest ended are forgotten)"),
    ("kept_result_bytes", "kept_results", "bytes",
     "Bytes of op results all sessions keep for retries (past the limit the sessions "
     "keeping the most give up their oldest)"),
    ("receipts", "receipts", "count",
     "Settlement receipts of all work queues (past the limit the oldest settled go)"),
    ("ephemeral_owners", "ephemeral_owners", "sessions",
     "Client sessions owning ephemeral subscriptions"),
    ("ephemeral_owned_subscriptions", "ephemeral_owners", "subscriptions",
     "Ephemeral subscriptions owned by client sessions"),
    ("popped_elements", "popped", "count",
     "Elements client sessions popped and did not give back, held so they may give them "
     "back (past the limit the clients holding the largest share give up their oldest)"),
    ("popped_bytes", "popped_bytes", "bytes",
     "Bytes of the pop results holding those elements (in every snapshot)"),
)


def _tables(ns: str, tables: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    for name, table, figure, help_text in TABLE_GAUGES:
        yield GaugeMetricFamily(f"{ns}_{name}", help_text, value=tables[table][figure])
        if figure in ("count", "bytes"):
            yield GaugeMetricFamily(f"{ns}_{name}_limit", f"The bound of {ns}_{name}",
                                    value=tables[table]["limit"])
    yield GaugeMetricFamily(f"{ns}_work_receipts_limit", f"The bound of {ns}_work_receipts",
                            value=tables["receipts"]["per_work_queue"])


def _raft(ns: str, status: dict[str, Any], leader_changes: int) -> Iterator[Metric]:
    state = GaugeMetricFamily(f"{ns}_raft_state", "1 for this node's current Raft role",
                              labels=["state"])
    for name in RAFT_STATES:
        state.add_metric([name], int(status["state"] == name))
    yield state
    leader = status["leader"]
    yield GaugeMetricFamily(
        f"{ns}_raft_leader_id", "The id of the leader this node follows (-1: none known)",
        value=int(leader) if leader is not None and str(leader).isdigit() else -1)
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
        value=leader_changes)
    yield CounterMetricFamily(f"{ns}_snapshots_taken", "Snapshots this node wrote",
                              value=status["snapshots_taken"])


def _depths(ns: str, view: ReadView, names: NamedObjects) -> Iterator[Metric]:
    """The depths of every object: by name for those :class:`NamedObjects` shows, the
    others summed (``name=""``)."""
    label = names.label
    queue = (GaugeMetricFamily(f"{ns}_queue_depth", "Elements in a queue", labels=["name"]),
             GaugeMetricFamily(f"{ns}_queue_delayed",
                               "Queue elements not poppable before their due time",
                               labels=["name"]))
    _each(queue, ((label("queue", n), (q.len(), q.delayed_len()))
                  for n, q in list(view.queues.items())))
    yield from queue
    work = (GaugeMetricFamily(f"{ns}_work_pending", "Pending items (consumer lag)",
                              labels=["name"]),
            GaugeMetricFamily(f"{ns}_work_in_flight", "Leased items", labels=["name"]),
            GaugeMetricFamily(f"{ns}_work_dead_letters", "Dead-lettered items",
                              labels=["name"]),
            GaugeMetricFamily(f"{ns}_work_delayed",
                              "Items not claimable before their due time (delayed pushes "
                              "and back-off)", labels=["name"]),
            GaugeMetricFamily(f"{ns}_work_receipts",
                              "Settlement receipts a work queue keeps (its share of "
                              f"{ns}_receipts)", labels=["name"]))
    _each(work, ((label("work", n), (w.core.pending_len(), w.core.in_flight_len(),
                                     w.core.dead_letter_len(), w.core.delayed_len(),
                                     len(w.table)))
                 for n, w in list(view.work_queues.items())))
    yield from work
    retained = GaugeMetricFamily(f"{ns}_topic_retained", "Retained topic elements",
                                 labels=["name"])
    lag = GaugeMetricFamily(f"{ns}_topic_consumer_lag", "Unread elements of a subscriber",
                            labels=["name", "subscriber"])
    group_lag = GaugeMetricFamily(f"{ns}_group_lag", "Elements a consumer group has not acked",
                                  labels=["name", "group"])
    pinned = GaugeMetricFamily(
        f"{ns}_topic_pinned_entries",
        "Elements a topic cannot trim because of its slowest durable subscriber (connected "
        "or not), named by the subscriber label", labels=["name", "subscriber"])
    shown: list[tuple[str, tuple[int, ...]]] = []
    lags: list[tuple[int, str, str]] = []
    for name, t in list(view.topics.items()):
        end = t.end_offset()
        shown.append((label("topic", name), (end - t.base_offset(),)))
        if shown[-1][0] == OTHER:
            continue
        records = t.subscriptions()
        for sid, sub in subscribers_behind(records, end)["subscribers"].items():
            lags.append((sub["lag"], name, sid))
        holder = retention_holder(records, end)["pinned_by"]
        if holder is not None:
            pinned.add_metric([name, holder["subscriber"]], holder["entries"])
        for group, g in groups_of(view, name).items():
            if label("work", g["queue"]) != OTHER:
                group_lag.add_metric([name, group], g["lag"])
    if len(lags) > names.limit:  # the most lagging of all, as many as objects of a kind
        lags = heapq.nsmallest(names.limit, lags, key=lambda e: (-e[0], e[1], e[2]))
    for value, name, sid in sorted(lags, key=itemgetter(1, 2)):
        lag.add_metric([name, sid], value)
    _each((retained,), shown)
    yield retained
    yield lag
    yield pinned
    yield group_lag


def _summed(ns: str, view: ReadView, names: NamedObjects) -> Iterator[Metric]:
    """How many objects of each kind are summed into ``name=""`` (not shown by name),
    and how many a kind shows by name at most."""
    summed = GaugeMetricFamily(
        f"{ns}_objects_summed",
        'Objects of a kind past named_objects, summed into the series name=""',
        labels=["kind"])
    for kind, table in (("queue", view.queues), ("work", view.work_queues),
                        ("topic", view.topics)):
        summed.add_metric([kind], sum(1 for n in list(table) if names.label(kind, n) == OTHER))
    yield summed
    yield GaugeMetricFamily(f"{ns}_named_objects_limit",
                            "Objects of each kind /metrics shows by name (named_objects)",
                            value=names.limit)


def _each(families: tuple[GaugeMetricFamily, ...],
          rows: Iterable[tuple[str, tuple[int, ...]]]) -> None:
    """``families[i]`` gets ``figures[i]`` of every row labelled by name; the rows of
    :data:`OTHER` are summed into one sample each, after the others."""
    other: list[int] | None = None
    for name, figures in rows:
        if name == OTHER:
            other = list(figures) if other is None else [a + b for a, b in
                                                           zip(other, figures, strict=True)]
            continue
        for family, figure in zip(families, figures, strict=True):
            family.add_metric([name], figure)
    if other is not None:
        for family, figure in zip(families, other, strict=True):
            family.add_metric([OTHER], figure)
