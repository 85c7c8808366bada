"""Labelled counters and histograms kept in plain numbers and turned into Prometheus
families at scrape time (part of :class:`~lazily_queue.metrics.NodeMetrics`).

They are counted on the node's event loop, after every commit, so a count must cost an
addition: ``prometheus_client``'s own metrics take a lock and check their state on
every call. Scrapes run on the same loop, so nothing else needs guarding. The
exposition is the one ``prometheus_client`` gives its own counters and histograms
(``_total``, ``_bucket``/``_count``/``_sum``, ``_created``).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import cast

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

_go_float = cast(Callable[[float], str], floatToGoString)

Labels = tuple[str, ...]


class Tally:
    """One counter: ``value`` only grows."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class Buckets:
    """One histogram: ``counts[i]`` observations at most ``bounds[i]`` and above the
    bound before it (the last: above every bound), and their ``sum``."""

    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value


class CounterFamily:
    """Counters ``{namespace}_{name}_total`` by ``labelnames``."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.children: dict[Labels, Tally] = {}

    def labels(self, *values: str) -> Tally:
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = Tally()
        return child

    def remove(self, *values: str) -> None:
        self.children.pop(values, None)

    def family(self) -> Metric:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in self.children.items():
            family.add_metric(list(values), child.value, created=child.created)
        return family


class HistogramFamily:
    """Histograms ``{namespace}_{name}`` by ``labelnames``, all with ``bounds``."""

    def __init__(self, name: str, documentation: str, bounds: Sequence[float],
                 labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = tuple(sorted(float(b) for b in bounds))
        self.labelnames = list(labelnames)
        self.children: dict[Labels, Buckets] = {}
        self._les = [_go_float(b) for b in self.bounds] + ["+Inf"]

    def labels(self, *values: str) -> Buckets:
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = Buckets(self.bounds)
        return child

    def family(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in self.children.items():
            running = 0
            cumulative: list[tuple[str, float]] = []
            for le, count in zip(self._les, child.counts, strict=True):
                running += count
                cumulative.append((le, float(running)))
            family.add_metric(list(values), cumulative, child.sum)
            family.samples.append(Sample(f"{self.name}_created",
                                         dict(zip(self.labelnames, values, strict=True)),
                                         child.created))
        return family


class TallyCollector(Collector):
    """Exposes ``families`` (counters and histograms made with a full name)."""

    def __init__(self, families: Sequence[CounterFamily | HistogramFamily],
                 registry: CollectorRegistry) -> None:
        self.families = list(families)
        registry.register(self)

    def collect(self) -> Iterator[Metric]:
        for family in self.families:
            yield family.family()
