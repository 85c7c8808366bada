"""A Redis that lost an object's keys while a process uses it (FLUSHDB by an operator, a
restart without persistence): the work queue declares itself again, so the items pushed
since are claimed, instead of every claim failing with NOGROUP until the process
restarts."""

from __future__ import annotations

import redis.asyncio as aioredis

from lazily_queue import connect
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh


async def test_a_work_queue_whose_keys_were_flushed_declares_itself_again(
    redis_server: BrokerServer,
) -> None:
    name = fresh("flushed")
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=30)
        await jobs.push("lost with the keys")
        raw = aioredis.Redis.from_url(redis_server.url)
        await raw.delete(*[f"lq:{{w:{name}}}:{part}" for part in ("stream", "dead", "cfg")])
        await raw.aclose()
        await jobs.push("after")
        delivery = await jobs.claim("w", timeout=5)
        assert delivery.value == "after"
        await jobs.ack("w", delivery.delivery_id)
        await jobs.storage.sync()  # type: ignore[attr-defined]
        assert jobs.storage.pending_len() == 0
