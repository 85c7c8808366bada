"""A claim of large items sent again after its answer was lost (the client's member
link died) is answered with the same leases: a claim leases at most 4 MiB of items, so
its result is kept, and a worker's ``deliveries()`` loop goes on."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from lazily_queue import WorkQueueCell
from lazily_queue.client.cluster import ClusterClient
from tests.client.test_client_cluster import client_of, cluster_with_clients, lose_first_answer

pytestmark = pytest.mark.timeout(60)

BIG = [bytes([i]) * 1_000_000 for i in range(9)]  # 9 MB in all: more than a session keeps


@contextlib.asynccontextmanager
async def large_items(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[
        tuple[ClusterClient, WorkQueueCell, list[int]]]:
    """A client, its work queue holding :data:`BIG`, and the request ids of the answers
    lost (the next answer to come is)."""
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        jobs = client.work_queue("w")
        for value in BIG:
            await jobs.push(value)
        yield client, jobs, lose_first_answer(monkeypatch)


async def test_a_retried_claim_of_large_items_is_answered_with_the_same_leases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with large_items(monkeypatch) as (client, jobs, dropped):
        first = await jobs.claim_many("a", 9)  # a claim stops at 4 MiB: its result is kept
        assert dropped
        assert [(d.item_id, d.value, d.attempt) for d in first] == [
            (i, BIG[i], 1) for i in range(4)]
        assert [d.value for d in await jobs.claim_many("a", 9)] == BIG[4:8]
        await client.barrier()
        assert (jobs.pending_len(), jobs.in_flight_len()) == (1, 8)


async def test_a_worker_whose_claim_answer_was_lost_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with large_items(monkeypatch) as (_client, jobs, dropped):
        done: list[bytes] = []
        async for job in jobs.deliveries("a", prefetch=9):
            async with job:
                done.append(job.value)
            if len(done) == len(BIG):
                break
        assert dropped
        assert done == BIG  # each once, in order
