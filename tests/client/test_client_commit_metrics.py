"""A client's ops are timed in ``lazily_queue_commit_seconds{op}`` of the member that
proposed them under the op each one is (not the ``CLIENT_OP`` / ``CLIENT_OPS`` they
travel in)."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue import SettlementRejected
from lazily_queue.metrics import COMMIT_KINDS, NodeMetrics
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _counts(metrics: NodeMetrics) -> dict[str, float]:
    return {kind: metrics.registry.get_sample_value(
        "lazily_queue_commit_seconds_count", {"op": kind}) or 0.0 for kind in COMMIT_KINDS}


async def test_a_clients_ops_count_under_the_op_they_wrap() -> None:
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        metrics = NodeMetrics(c.node(1))
        q = client.queue("orders")
        await q.push("declared")
        jobs = client.work_queue("jobs", visibility_timeout=5)
        await jobs.push("declared")
        news = client.topic("news")
        await news.publish("declared")
        await client.barrier()
        before = _counts(metrics)

        await asyncio.gather(*(q.push(i) for i in range(5)))  # together: one CLIENT_OPS
        await q.push(5)  # alone: one CLIENT_OP
        assert await q.pop() == "declared"
        await jobs.push("job")
        first = await jobs.claim("w", timeout=5)
        second = await jobs.claim("w", timeout=5)
        await jobs.ack("w", first.delivery_id)
        await jobs.nack("w", second.delivery_id)
        await news.publish("x")

        after = _counts(metrics)
        grew = {kind: after[kind] - before[kind] for kind in COMMIT_KINDS}
        assert grew["push"] == 7 and grew["pop"] == 1, grew
        assert (grew["claim"], grew["ack"], grew["nack"], grew["publish"]) == (2, 1, 1, 1), grew
        assert metrics.registry.get_sample_value(
            "lazily_queue_errors_total", {"kind": "rejected"}) == 0


async def test_a_clients_op_refused_by_the_cluster_counts_as_rejected() -> None:
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        metrics = NodeMetrics(c.node(1))
        jobs = client.work_queue("jobs", visibility_timeout=5)
        await jobs.push("job")
        delivery = await jobs.claim("w", timeout=5)
        await jobs.ack("w", delivery.delivery_id)
        await client.barrier()
        with pytest.raises(SettlementRejected):
            await jobs.ack("other", delivery.delivery_id)
        assert metrics.registry.get_sample_value(
            "lazily_queue_errors_total", {"kind": "settlement_rejected"}) == 1
