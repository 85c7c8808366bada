"""A consumer that waits (claim, pop, a subscriber's read) on an object it cannot use
raises the typed error at once, as a producer does: it never waits for work forever."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from lazily_queue import connect
from lazily_queue.brokers import IncompatibleBrokerObject
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh


async def test_a_claim_on_an_incompatible_work_queue_raises_it(broker_url: str) -> None:
    name = fresh("vtc")
    async with connect(broker_url) as client:
        await client.work_queue(name, visibility_timeout=30).push("kept")
    async with connect(broker_url) as client:
        jobs = client.work_queue(name, visibility_timeout=5)
        with pytest.raises(IncompatibleBrokerObject):
            await asyncio.wait_for(jobs.claim("w"), 10)


async def test_a_pop_on_an_incompatible_queue_raises_it(broker_url: str) -> None:
    name = fresh("capc")
    async with connect(broker_url) as client:
        await client.queue(name, capacity=2).push("kept")
    async with connect(broker_url) as client:
        queue = client.queue(name, capacity=5)
        with pytest.raises(IncompatibleBrokerObject):
            await asyncio.wait_for(queue.pop(), 10)


async def test_a_consumer_works_once_the_conflicting_object_is_gone(
    redis_server: BrokerServer,
) -> None:
    name = fresh("vtc")
    async with connect(redis_server.url) as client:
        await client.work_queue(name, visibility_timeout=30).push("theirs")
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=5)
        with pytest.raises(IncompatibleBrokerObject):
            await asyncio.wait_for(jobs.claim("w"), 10)
        raw = aioredis.Redis.from_url(redis_server.url)
        await raw.delete(*[f"lq:{{w:{name}}}:{part}" for part in ("stream", "dead", "cfg")])
        await raw.aclose()
        await jobs.push("mine")
        delivery = await asyncio.wait_for(jobs.claim("w"), 10)
        assert delivery.value == "mine"
