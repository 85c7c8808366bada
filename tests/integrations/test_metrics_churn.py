"""Metrics under churn: the series of a deleted object go with it, so short-lived names
(per-request queues a client creates and deletes) do not grow ``/metrics`` forever."""

from __future__ import annotations

from pathlib import Path

from lazily_queue import admin, testing
from lazily_queue.metrics import NodeMetrics


def series_naming(metrics: NodeMetrics, prefix: str) -> list[str]:
    body = metrics.render().decode()
    return [line for line in body.splitlines() if f'name="{prefix}' in line]


async def test_deleted_objects_leave_the_metrics(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node)
        for i in range(5):
            await node.queue(f"tmp.q{i}").push(i)
            jobs = node.work_queue(f"tmp.w{i}", visibility_timeout=30)
            await jobs.push(i)
            await jobs.claim("w")
            await node.topic(f"tmp.t{i}").publish(i)
        assert len(series_naming(metrics, "tmp.")) > 15
        for i in range(5):
            await admin.delete(node, "queue", f"tmp.q{i}")
            await admin.delete(node, "work_queue", f"tmp.w{i}")
            await admin.delete(node, "topic", f"tmp.t{i}")
        assert series_naming(metrics, "tmp.") == []

        # A name used again counts from zero, as a new object.
        again = node.work_queue("tmp.w0", visibility_timeout=30)
        await again.push("x")
        await node.queue("tmp.q0").push("y")
        value = metrics.registry.get_sample_value
        total = "lazily_queue_operations_total"
        assert value(total, {"family": "work", "name": "tmp.w0", "op": "push"}) == 1
        assert value(total, {"family": "work", "name": "tmp.w0", "op": "claim"}) is None
        assert value(total, {"family": "queue", "name": "tmp.q0", "op": "push"}) == 1


async def test_objects_a_snapshot_no_longer_holds_leave_the_metrics(tmp_path: Path) -> None:
    """A member that installs a snapshot (it fell behind while objects were deleted)
    never applies their deletions: their series go when it counts from the snapshot."""
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node)
        state = node.driver.replica.fsm
        await node.queue("tmp.gone").push(1)
        await node.topic("tmp.gone").publish(1)
        await node.queue("kept").push(1)
        def counted(prefix: str) -> list[str]:
            return [line for line in series_naming(metrics, prefix)
                    if line.startswith("lazily_queue_operations_total")]

        assert len(counted("tmp.")) == 2
        kept = state.capture()
        del kept["queues"]["tmp.gone"], kept["topics"]["tmp.gone"]
        state.restore(kept)  # as an installed snapshot restores it
        metrics._on_events(state.drain_events())
        assert series_naming(metrics, "tmp.") == []
        assert counted("kept")
