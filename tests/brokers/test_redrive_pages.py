"""A redrive of many dead letters reads them a page at a time: the client never holds
the whole dead-letter stream (it may be millions of messages)."""

from __future__ import annotations

import cbor2
import nats
import redis.asyncio as aioredis

from lazily_queue import connect
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh

#: The most dead letters a redrive may hold at once in this test.
PAGE = 256


async def test_a_nats_redrive_reads_the_dead_letters_a_page_at_a_time(
    nats_server: BrokerServer,
) -> None:
    name = fresh("redrive")
    async with connect(nats_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=30)
        await jobs.storage.declare()  # type: ignore[attr-defined]
        nc = await nats.connect(nats_server.url)
        js = nc.jetstream()
        total = PAGE * 2 + 3
        for i in range(total):
            await js.publish(f"lq.dl.{name}", cbor2.dumps(i),
                             headers={"Lq-Item": str(i), "Lq-Attempts": "1"})
        await nc.close()
        backend = jobs.storage._backend  # type: ignore[attr-defined]
        read = backend.messages
        limits: list[int] = []

        async def spy(stream: str, start: int, limit: int, *args: object) -> object:
            limits.append(limit)
            return await read(stream, start, limit, *args)

        backend.messages = spy
        try:
            assert await jobs.redrive() == total
        finally:
            del backend.messages
        assert limits and max(limits) <= PAGE
        await jobs.storage.sync()  # type: ignore[attr-defined]
        assert jobs.storage.dead_letter_len() == 0
        assert jobs.storage.pending_len() == total


async def test_a_redis_redrive_moves_the_dead_letters_a_page_per_script(
    redis_server: BrokerServer,
) -> None:
    name = fresh("redrive")
    async with connect(redis_server.url) as client:
        jobs = client.work_queue(name, visibility_timeout=30)
        await jobs.storage.declare()  # type: ignore[attr-defined]
        raw = aioredis.Redis.from_url(redis_server.url)
        total = PAGE * 2 + 3
        pipe = raw.pipeline()
        for i in range(total):
            pipe.xadd(f"lq:{{w:{name}}}:dead",
                      {"i": f"{i + 1}-0", "v": cbor2.dumps(i), "a": 1, "r": "nack"})
        await pipe.execute()
        await raw.aclose()
        backend = jobs.storage._backend  # type: ignore[attr-defined]
        run = backend.run
        calls: list[list[object]] = []

        async def spy(script: str, keys: list[str], args: list[object]) -> object:
            if script == "WORK_REDRIVE":
                calls.append(args)
            return await run(script, keys, args)

        backend.run = spy
        try:
            assert await jobs.redrive([1 << 20, 3 << 20]) == 2
            assert await jobs.redrive() == total - 2
        finally:
            del backend.run
        assert len(calls) >= 4 and all(int(str(args[2])) <= PAGE for args in calls)
        await jobs.storage.sync()  # type: ignore[attr-defined]
        assert jobs.storage.dead_letter_len() == 0
        assert jobs.storage.pending_len() == total
        first = await jobs.claim("w", timeout=5)
        assert first.value == 0
