"""A client's queues with limits: declared through the client, refused and dropped in
log order on the members, mirrored with their quota to the client's readers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import LimitExceeded, Limits, QueueCell
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_a_client_declares_limits_and_its_mirror_follows_the_drops() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        recent: QueueCell[Any] = client.queue(
            "recent", limits=Limits(max_length=2, overflow="drop_oldest"))
        assert recent.len() == 0  # start mirroring
        for i in range(5):
            await recent.push(i)
        await client.barrier()
        assert recent.quota is not None
        assert recent.len() == 2 and recent.head() == 3 and recent.quota.dropped() == 3
        strict: QueueCell[Any] = client.queue("strict", limits=Limits(max_bytes=3))
        await strict.push("abc")
        with pytest.raises(LimitExceeded) as refused:
            await strict.push("d", wait=False)
        assert refused.value.limit == "max_bytes"
        member = c.node(2)
        await member.barrier()
        same = member.queue("recent", limits=Limits(max_length=2, overflow="drop_oldest"))
        assert same.quota is not None and same.quota.dropped() == 3


async def test_a_client_declares_a_work_queue_with_limits_as_a_member_does() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        jobs = client.work_queue("jobs", limits=Limits(max_length=2))
        await jobs.push("a")
        await jobs.push("b")
        with pytest.raises(LimitExceeded) as refused:
            await jobs.push("c", wait=False)
        assert refused.value.limit == "max_length"
        await client.barrier()
        assert jobs.pending_len() == 2 and jobs.limits() == Limits(max_length=2)
        waiting = asyncio.ensure_future(jobs.push("c"))  # waits for room, no polling
        job = await jobs.claim("w")
        await asyncio.sleep(0)
        assert not waiting.done()  # a leased item still counts
        await jobs.ack("w", job.delivery_id)
        await waiting
        await client.barrier()
        assert [p.value for p in jobs.pending()] == ["b", "c"]
        same = c.node(2).work_queue("jobs", limits=Limits(max_length=2))
        await c.node(2).barrier()
        assert same.pending_len() == 2
