"""A claim waiting on a work queue its mirror shows empty, while the broker cannot be
reached: at its deadline it raises ``BrokerUnavailable`` naming the broker (its mirror
could not see the broker, so "no pending item" would not be known), not
``TimeoutError``; once the broker is back, claims work again in the same client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import BrokerServer, NatsServer, RedisServer, find_binary

from .conftest import fresh


@pytest.mark.parametrize("kind", ["nats", "redis"])
async def test_a_claim_on_an_empty_work_queue_names_the_broker_it_cannot_reach(
        kind: str) -> None:
    cls: type[BrokerServer] = RedisServer if kind == "redis" else NatsServer
    if find_binary(cls.binary) is None:
        pytest.skip(f"{cls.binary} is not installed")
    # nats: the first refresh after the drop fails once its request times out
    options: dict[str, Any] = {"timeout": 1.0} if kind == "nats" else {}
    async with cls() as server:
        async with connect(server.url, poll_interval=0.2, **options) as client:
            jobs = client.work_queue(fresh("down"), visibility_timeout=5)
            await jobs.storage.sync()
            with pytest.raises(TimeoutError):  # the broker up: nothing pending
                await jobs.claim("w", timeout=0.3)
            await server.stop(kill=True)
            for claim in (lambda: jobs.claim("w", timeout=3),
                          lambda: jobs.claim_many("w", 4, timeout=3)):
                with pytest.raises(BrokerUnavailable, match=r"127\.0\.0\.1"):
                    await claim()
            await server.start()
            await asyncio.wait_for(jobs.push("after"), 30)
            delivery = await jobs.claim("w", timeout=30)
            assert delivery.value == "after"
            await jobs.ack("w", delivery.delivery_id)
