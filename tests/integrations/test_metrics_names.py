"""``/metrics`` shows at most ``named_objects`` objects of each kind by name (the first
seen); the others are summed into ``name=""``, so totals still add up and a cluster of
many objects does not make a page of as many series (:mod:`lazily_queue.metrics_names`)."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue import Limits, admin, testing
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.metrics import NodeMetrics
from lazily_queue.metrics_names import DEFAULT_NAMED_OBJECTS, NamedObjects, SummedCounters

pytestmark = pytest.mark.timeout(120)


def samples(metrics: NodeMetrics, metric: str) -> dict[tuple[str, ...], float]:
    """``{label values: value}`` of the samples named ``metric``."""
    found: dict[tuple[str, ...], float] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == metric:
                found[tuple(sample.labels.values())] = sample.value
    return found


async def test_objects_past_the_limit_are_summed_into_one_series_per_metric() -> None:
    async with testing.cluster(1) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node, named_objects=3)
        for i in range(6):
            await node.queue(f"q{i}").push_many(list(range(i + 1)))
            await node.work_queue(f"w{i}", visibility_timeout=30).push(i)
            await node.topic(f"t{i}").publish(i)
        depth = samples(metrics, "lazily_queue_queue_depth")
        assert depth == {("q0",): 1, ("q1",): 2, ("q2",): 3, ("",): 4 + 5 + 6}
        pushes = {labels[1]: value for labels, value in
                  samples(metrics, "lazily_queue_operations_total").items()
                  if labels[0] == "queue" and labels[2] == "push"}
        assert pushes == {"q0": 1, "q1": 2, "q2": 3, "": 4 + 5 + 6}
        assert samples(metrics, "lazily_queue_work_pending") == {
            ("w0",): 1, ("w1",): 1, ("w2",): 1, ("",): 3}
        assert samples(metrics, "lazily_queue_topic_retained") == {
            ("t0",): 1, ("t1",): 1, ("t2",): 1, ("",): 3}
        # A deleted object's place goes to the next name seen; the sum keeps counting.
        await admin.delete(node, "queue", "q0")
        await node.queue("q9").push("x")
        depth = samples(metrics, "lazily_queue_queue_depth")
        assert set(depth) == {("q1",), ("q2",), ("q9",), ("",)}  # its push was seen first
        assert sum(depth.values()) == 2 + 3 + 4 + 5 + 6 + 1
        pushes = {labels[1]: value for labels, value in
                  samples(metrics, "lazily_queue_operations_total").items()
                  if labels[0] == "queue" and labels[2] == "push"}
        assert pushes == {"q1": 2, "q2": 3, "q9": 1, "": 4 + 5 + 6}


async def test_how_many_objects_are_summed_is_a_metric_of_its_own() -> None:
    """The operator sees the cut: per kind, how many objects are not shown by name."""
    async with testing.cluster(1) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node, named_objects=2)
        for i in range(5):
            await node.queue(f"q{i}").push(i)
        await node.topic("t0").publish(1)
        assert samples(metrics, "lazily_queue_objects_summed") == {
            ("queue",): 3, ("work",): 0, ("topic",): 0}
        assert samples(metrics, "lazily_queue_named_objects_limit") == {(): 2}


async def test_a_cluster_of_many_objects_makes_a_bounded_page_by_default() -> None:
    count = DEFAULT_NAMED_OBJECTS + 200
    async with testing.cluster(1) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node)
        await asyncio.gather(*(node.queue(f"q{i}").push(i) for i in range(count)))
        depth = samples(metrics, "lazily_queue_queue_depth")
        assert len(depth) == DEFAULT_NAMED_OBJECTS + 1
        assert depth[("",)] == 200 and sum(depth.values()) == count
        operations = samples(metrics, "lazily_queue_operations_total")
        assert len(operations) == DEFAULT_NAMED_OBJECTS + 1
        assert sum(operations.values()) == count


async def test_named_objects_zero_sums_every_object() -> None:
    async with testing.cluster(1) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node, named_objects=0)
        await node.queue("a").push(1)
        await node.queue("b").push(2)
        assert samples(metrics, "lazily_queue_queue_depth") == {("",): 2}


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_a_bad_limit_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(InvalidConfiguration, match="named_objects must be an int >= 0"):
        NamedObjects(bad)  # type: ignore[arg-type]


def test_a_summed_counter_keeps_what_objects_counted_when_they_leave_the_sum() -> None:
    summed = SummedCounters()
    kind = ("queue",)
    assert summed.totals("m", {kind: {"a": (3,), "b": (4,)}}, 1) == {kind: (7,)}
    assert summed.totals("m", {kind: {"a": (5,)}}, 1) == {kind: (9,)}  # b deleted: kept
    assert summed.totals("m", {kind: {"a": (1,)}}, 1) == {kind: (10,)}  # a counts anew
    assert summed.totals("m", {}, 1) == {kind: (10,)}  # a series once summed stays
    assert summed.totals("other", {}, 1) == {}


async def test_summed_dropped_counts_do_not_go_down_when_an_object_is_deleted() -> None:
    async with testing.cluster(1) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node, named_objects=0)
        for name in ("a", "b"):
            q = node.queue(name, limits=Limits(max_length=1, overflow="drop_oldest"))
            await q.push_many([1, 2, 3])
        dropped = samples(metrics, "lazily_queue_dropped_total")
        assert dropped == {("", "queue", "drop_oldest"): 4}
        await admin.delete(node, "queue", "a")
        await node.queue("b", limits=Limits(max_length=1, overflow="drop_oldest")).push(4)
        assert samples(metrics, "lazily_queue_dropped_total") == {
            ("", "queue", "drop_oldest"): 5}


async def test_the_consumer_lag_shows_the_most_lagging_subscribers_of_all_topics_only() -> None:
    async with testing.cluster(1) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node, named_objects=3)
        for k in range(3):  # each topic's subscribers each read one more than the last
            topic = node.topic(f"t{k}")
            for s in range(4):
                await topic.storage.subscribe(f"s{s}")
            await topic.publish_many(list(range(10 + k)))
            for s in range(4):
                for _ in range(s):
                    await topic.storage.poll(f"s{s}")
        lag = samples(metrics, "lazily_queue_topic_consumer_lag")
        # 12 lags: the 3 largest (12, then 11 twice; t0's 10 is left out)
        assert lag == {("t1", "s0"): 11, ("t2", "s0"): 12, ("t2", "s1"): 11}
