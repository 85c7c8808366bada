"""A client's transactions: one TXN under the client's session, checked per op for its
permissions, mirrored to the client's readers."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import Job, PermissionDenied, QueueCell, TransactionAborted, WorkQueueCell
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_a_client_acks_and_produces_in_one_transaction() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        jobs: WorkQueueCell = client.work_queue("jobs", visibility_timeout=30)
        out: QueueCell[Any] = client.queue("out", capacity=1)
        assert jobs.pending_len() == 0 and out.len() == 0  # start mirroring
        await jobs.push(3)
        job = Job(jobs, await jobs.claim("c1"))
        async with client.transaction() as tx:
            acked = tx.ack(job)
            tx.push(out, job.value * 2)
        assert acked.result.outcome == "acked" and job.receipt is acked.result
        await client.barrier()
        assert out.len() == 1 and out.head() == 6 and jobs.in_flight_len() == 0
        member = c.node(2)
        await member.barrier()
        assert member.queue("out", capacity=1).len() == 1
        await jobs.push(4)
        job = Job(jobs, await jobs.claim("c1"))
        with pytest.raises(TransactionAborted) as caught:
            async with client.transaction() as tx:
                tx.ack(job)
                tx.push(out, 8)  # out holds at most 1
        assert caught.value.code == "full" and caught.value.index == 1
        await client.barrier()
        assert jobs.in_flight_len() == 1 and out.len() == 1


async def test_a_transaction_needs_the_permission_of_every_op() -> None:
    # "secret" may be opened (consume) but not pushed to (produce)
    async with (cluster_with_clients(produce=["out"], consume=["jobs", "secret"])
                as (c, addresses),
                client_of(addresses) as client):
        jobs: WorkQueueCell = client.work_queue("jobs", visibility_timeout=30)
        await c.node(1).work_queue("jobs", visibility_timeout=30).push("j")
        job = Job(jobs, await jobs.claim("c1"))
        with pytest.raises(PermissionDenied, match=r"may not push to 'secret' \(queue_push\)"):
            async with client.transaction() as tx:
                tx.ack(job)
                tx.push(client.queue("secret"), 1)
        await client.barrier()
        assert jobs.in_flight_len() == 1


async def test_a_client_transaction_pushes_a_job_with_every_option() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        jobs: WorkQueueCell = client.work_queue("jobs", visibility_timeout=30)
        assert jobs.pending_len() == 0  # start mirroring
        async with client.transaction() as tx:
            later = tx.push(jobs, "later", delay=3600, ttl=7200, priority=4,
                            headers={"k": "v"}, msg_id="tx-later")
            tx.push(jobs, "later", delay=3600, msg_id="tx-later")  # applies nothing
            now = tx.push(jobs, "now", priority=2)
        await client.barrier()
        assert (jobs.pending_len(), jobs.delayed_len()) == (1, 1)
        assert jobs.headers_of(later.result) == {"k": "v"} and now.result != later.result
        member = c.node(2).work_queue("jobs", visibility_timeout=30)
        await c.node(2).barrier()
        assert member.pending_by_priority() == {2: 1} and member.delayed_len() == 1
