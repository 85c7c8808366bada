"""A broker client closed right after a loop broke out of ``deliveries()`` or
``async for x in q``: the acks of the last blocks reach the broker, and the prefetched
elements go back to the queue, before the client closes."""

from __future__ import annotations

import lazily_queue
from tests.client.test_client_close_acks import settle_one_by_hand, take_one, work_off

from .conftest import fresh


async def test_closing_after_a_break_commits_the_queued_acks(broker_url: str) -> None:
    name = fresh("close-acks")
    async with lazily_queue.connect(broker_url) as client:
        await work_off(client, name)
    async with lazily_queue.connect(broker_url) as client:
        jobs = client.work_queue(name)
        await jobs.storage.sync()
        assert (jobs.pending_len(), jobs.in_flight_len()) == (0, 0)


async def test_closing_after_a_break_gives_the_prefetched_elements_back(
        broker_url: str) -> None:
    name = fresh("close-items")
    async with lazily_queue.connect(broker_url) as client:
        await take_one(client, name)
    async with lazily_queue.connect(broker_url) as client:
        queue = client.queue(name)
        await queue.storage.sync()
        assert queue.len() == 9
        assert await queue.pop() == 1  # in order (NATS: at the tail of an empty queue)


async def test_closing_after_a_break_releases_the_prefetched_leases(broker_url: str) -> None:
    name = fresh("close-leases")
    async with lazily_queue.connect(broker_url) as client:
        await settle_one_by_hand(client, name)
    async with lazily_queue.connect(broker_url) as client:
        jobs = client.work_queue(name)
        await jobs.storage.sync()
        assert (jobs.pending_len(), jobs.in_flight_len()) == (9, 0)
