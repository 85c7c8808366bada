"""The plain-number counters and histograms expose what prometheus_client's own do."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest

from lazily_queue.metrics_tallies import CounterFamily, HistogramFamily, TallyCollector

BOUNDS = (0.001, 0.01, 0.1, 1.0, 2.5)
OBSERVED = [0.0, 0.001, 0.0010001, 0.01, 0.05, 1.0, 2.5, 3.0, 100.0]


def _without_created(text: bytes) -> list[str]:
    return [line for line in text.decode().splitlines() if "_created" not in line]


def test_the_exposition_is_prometheus_clients_own() -> None:
    theirs = CollectorRegistry()
    their_hist = Histogram("h_seconds", "doc h", ["op"], namespace="ns", buckets=BOUNDS,
                           registry=theirs)
    their_count = Counter("ops", "doc c", ["family", "name"], namespace="ns", registry=theirs)
    ours = CollectorRegistry()
    hist = HistogramFamily("ns_h_seconds", "doc h", BOUNDS, ["op"])
    count = CounterFamily("ns_ops", "doc c", ["family", "name"])
    TallyCollector([hist, count], ours)
    for value in OBSERVED:
        their_hist.labels("push").observe(value)
        hist.labels("push").observe(value)
    their_hist.labels("pop").observe(0.5)
    hist.labels("pop").observe(0.5)
    their_count.labels("queue", "a").inc(3)
    count.labels("queue", "a").inc(3)
    their_count.labels("queue", "b").inc()
    count.labels("queue", "b").inc()
    assert _without_created(generate_latest(ours)) == _without_created(generate_latest(theirs))
    assert ours.get_sample_value("ns_h_seconds_bucket", {"op": "push", "le": "0.001"}) == 2
    created = ours.get_sample_value("ns_h_seconds_created", {"op": "push"})
    assert created is not None and created > 0


def test_a_removed_counter_leaves_the_exposition_and_counts_again_from_zero() -> None:
    registry = CollectorRegistry()
    count = CounterFamily("ns_ops", "doc", ["name"])
    TallyCollector([count], registry)
    count.labels("a").inc(5)
    count.remove("a")
    assert registry.get_sample_value("ns_ops_total", {"name": "a"}) is None
    count.labels("a").inc()
    assert registry.get_sample_value("ns_ops_total", {"name": "a"}) == 1
