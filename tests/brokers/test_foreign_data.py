"""Records another program wrote into a broker object's keys or streams (dead letters,
subscriptions, elements) with fields or payloads this library would not write: the
mirror still refreshes, shows what it can (a value that does not decode as
``Undecodable``), and drops nothing."""

from __future__ import annotations

import cbor2
import nats
import pytest
import redis.asyncio as aioredis

from lazily_queue import connect
from lazily_queue.brokers.codec import Undecodable
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh


async def _foreign_dead_letters(server: BrokerServer, kind: str, name: str) -> None:
    if kind == "redis":
        r = aioredis.Redis.from_url(server.url)
        key = f"lq:{{w:{name}}}:dead"
        await r.xadd(key, {"i": "bogus", "v": cbor2.dumps(42), "a": "many", "r": "exploded"})
        await r.xadd(key, {"x": "no fields of ours"})
        await r.aclose()
    else:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.publish(f"lq.dl.{name}", cbor2.dumps(42),
                         headers={"Lq-Item": "bogus", "Lq-Attempts": "-3", "Lq-Reason": "x"})
        await js.publish(f"lq.dl.{name}", b"\xff")
        await nc.close()


@pytest.fixture(params=["nats", "redis"])
def server(request: pytest.FixtureRequest) -> tuple[str, BrokerServer]:
    return request.param, request.getfixturevalue(f"{request.param}_server")


async def test_dead_letters_another_program_wrote_are_listed_not_fatal(
    server: tuple[str, BrokerServer],
) -> None:
    kind, broker = server
    name = fresh("foreign")
    async with connect(broker.url) as client:
        jobs = client.work_queue(name, visibility_timeout=30, max_deliveries=2)
        await jobs.push("mine")
        await _foreign_dead_letters(broker, kind, name)
        await jobs.storage.sync()  # type: ignore[attr-defined]
        letters = jobs.storage.dead_letters()
        assert letters[0].value == 42
        assert len(letters) == 2 and jobs.storage.dead_letter_len() == 2
        assert all(letter.attempts >= 1 for letter in letters)
        assert await jobs.redrive() == 2
        assert jobs.storage.pending_len() == 1 or await jobs.claim("w", timeout=5)


async def test_a_subscription_record_another_program_wrote_is_skipped(
    redis_server: BrokerServer,
) -> None:
    name = fresh("foreign")
    async with connect(redis_server.url) as client:
        news = client.topic(name)
        await news.subscribe("mine")
        r = aioredis.Redis.from_url(redis_server.url)
        await r.hset(f"lq:{{t:{name}}}:subs", "theirs", "not|a|record|at all")
        await r.aclose()
        await news.publish("hello")
        await news.storage.sync()  # type: ignore[attr-defined]
        assert news.storage.read("mine") == "hello"
        assert "theirs" not in news.storage.subscriptions()
        assert (await news.storage.poll("mine")).result == "hello"
        assert (await news.storage.gc()).result == 1


async def test_plain_text_another_program_queued_arrives_whole_as_undecodable(
    server: tuple[str, BrokerServer],
) -> None:
    """Text starts with a byte that is a short CBOR string's head (``h``: 8 characters):
    decoding it alone made ``hello world`` arrive as the value ``'ello wor'``."""
    kind, broker = server
    name = fresh("foreign")
    texts = [b"hello world", b"123", b"x" * 200]
    async with connect(broker.url) as client:
        q = client.queue(name)
        await q.push("mine")
        if kind == "redis":
            r = aioredis.Redis.from_url(broker.url)
            await r.rpush(f"lq:{{q:{name}}}:list", *texts)
            await r.aclose()
        else:
            nc = await nats.connect(broker.url)
            for text in texts:
                await nc.jetstream().publish(f"lq.q.{name}", text)
            await nc.close()
        await q.push("mine too")
        got = [await q.pop(timeout=5) for _ in range(5)]
    assert got[0] == "mine" and got[4] == "mine too"
    assert [v.data for v in got[1:4] if isinstance(v, Undecodable)] == texts


async def test_entries_another_program_added_to_a_redis_topic_are_elements(
    redis_server: BrokerServer,
) -> None:
    """A foreign ``XADD`` to a topic's stream took an offset the topic did not count: the
    advance past it returned nothing and moved the cursor to the end, so the element
    published after it was never delivered, and ``gc`` said entries were deleted."""
    name = fresh("foreign")
    async with connect(redis_server.url) as client:
        news = client.topic(name)
        await news.subscribe("s")
        await news.publish("mine")
        r = aioredis.Redis.from_url(redis_server.url)
        await r.xadd(f"lq:{{t:{name}}}:stream", {"x": "no value field"})
        await r.xadd(f"lq:{{t:{name}}}:stream", {"v": b"hello world"})
        await r.aclose()
        assert await news.publish("mine too") == 3
        got = [await news.poll("s") for _ in range(5)]
        assert got[0] == "mine" and got[3] == "mine too" and got[4] is None
        assert [v.data for v in got[1:3] if isinstance(v, Undecodable)] == [b"", b"hello world"]
        await news.storage.sync()  # type: ignore[attr-defined]
        assert news.storage.end_offset() == 4
        assert (await news.storage.gc()).result == 4
