"""The gauges and counters of cell limits, read from the node's applied state at scrape
time (part of :class:`~lazily_queue.metrics.NodeMetrics`).

For each cell declared with limits (label ``cell`` its name, ``kind`` its kind:
``queue``, ``work_queue``, or ``topic`` for a topic's retention):
``lazily_queue_cell_bytes`` (the bytes held, as
:func:`~lazily_queue.core.limits.value_size` counts them), ``lazily_queue_cell_limit``
(each bound, label ``limit``: ``max_length`` / ``max_bytes``) and
``lazily_queue_dropped_total`` (elements the cell dropped, label ``reason``:
``drop_oldest``). Every replica applies the same entries, so the figures agree. Past
``named_objects`` cells of a kind, the others' bytes and drops are summed into
``cell=""`` (:mod:`.metrics_names`), without their limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .core.limited_fifo import LimitedFifo
from .core.limited_topic import LimitedTopic
from .core.limited_work import LimitedWorkQueue
from .metrics_names import OTHER

if TYPE_CHECKING:
    from .metrics import NodeMetrics


class LimitsCollector(Collector):
    """The limits metrics of the node (module docstring)."""

    def __init__(self, metrics: NodeMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        node = self.metrics.node
        ns = self.metrics.namespace
        held = GaugeMetricFamily(f"{ns}_cell_bytes", "Bytes held by a cell with limits",
                                 labels=["cell", "kind"])
        bound = GaugeMetricFamily(f"{ns}_cell_limit", "A limit of a cell (elements or bytes)",
                                  labels=["cell", "kind", "limit"])
        dropped = CounterMetricFamily(f"{ns}_dropped",
                                      "Elements a cell dropped under its limits or retention",
                                      labels=["cell", "kind", "reason"])
        if node.running:
            view = node.view
            quotas = [(name, "queue", q.quota) for name, q in sorted(view.queues.items())
                      if isinstance(q, LimitedFifo)]
            quotas += [(name, "topic", t.quota) for name, t in sorted(view.topics.items())
                       if isinstance(t, LimitedTopic)]
            figures = [(name, kind, quota.limits, quota.bytes, quota.dropped)
                       for name, kind, quota in quotas]
            figures += [(name, "work_queue", s.core.limits, s.core.held_bytes, s.core.dropped)
                        for name, s in sorted(view.work_queues.items())
                        if isinstance(s.core, LimitedWorkQueue)]
            label = self.metrics.names.label
            other: dict[str, int] = {}
            other_drops: dict[tuple[str, ...], dict[str, tuple[int, ...]]] = {}
            for name, kind, limits, size, drops in figures:
                if label(kind, name) == OTHER:  # summed, without the limits
                    other[kind] = other.get(kind, 0) + size
                    for reason, count in drops.items():
                        other_drops.setdefault((kind, reason), {})[name] = (count,)
                    continue
                held.add_metric([name, kind], size)
                for limit, value in (("max_length", limits.max_length),
                                     ("max_bytes", limits.max_bytes)):
                    if value is not None:
                        bound.add_metric([name, kind, limit], value)
                for reason, count in sorted(drops.items()):
                    dropped.add_metric([name, kind, reason], count)
            for kind, size in other.items():
                held.add_metric([OTHER, kind], size)
            summed = self.metrics.names.summed.totals("dropped", other_drops, 1)
            for (kind, reason), (count,) in sorted(summed.items()):
                dropped.add_metric([OTHER, kind, reason], count)
        yield held
        yield bound
        yield dropped
