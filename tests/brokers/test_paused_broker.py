"""A broker that stops answering (its process paused, SIGSTOP) past the client's
timeout: each call fails with a typed error, nothing is left raising in the background,
and the calls made after it answers again succeed."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from lazily_queue import QueueCell, connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import NatsServer, RedisServer, find_binary

from .conftest import fresh

pytestmark = pytest.mark.timeout(60)


@pytest.mark.skipif(find_binary("nats-server") is None, reason="nats-server is not installed")
async def test_a_nats_pop_while_the_server_is_paused_leaves_no_unread_task_error() -> None:
    """A pop's pull outlived by the consumer lookup made after its grace (both
    unanswered): the pull's timeout was left unread, logged by asyncio as "Task exception
    was never retrieved" with a nats traceback. The server is paused once every thread of
    it is stopped: one signalled a moment before still answered the pop's pull (no
    messages) and the refresh after it, and the pop waited on for an element."""
    reported: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: reported.append(ctx))
    async with NatsServer() as server:
        assert server.process is not None
        async with connect(server.url, timeout=1.0) as client:
            q: QueueCell[Any] = client.queue(fresh("paused"))
            await q.push("warm-up")
            assert await q.pop() == "warm-up"
            await server.pause()
            try:
                with pytest.raises(BrokerUnavailable):
                    await asyncio.wait_for(q.pop(), 30)
            finally:
                server.resume()
            await q.push("after")
            assert await q.pop(timeout=5) == "after"
            await asyncio.sleep(0.1)
            gc.collect()
            await asyncio.sleep(0.1)
    assert [ctx.get("message") for ctx in reported] == []


@pytest.mark.skipif(find_binary("redis-server") is None,
                    reason="redis-server is not installed")
async def test_a_redis_push_to_a_paused_server_says_whether_it_applied_is_unknown() -> None:
    """redis-server paused (SIGSTOP) with a push on its way: the push fails at the
    connection's ``timeout`` (1 s here; 30 s by default) with ``BrokerUnavailable``
    saying it may have applied. Either holds: sent on an open connection it applies once
    the server runs again; a connection opened meanwhile (the poll holding the open one)
    times out in its handshake, before the push is sent. Nothing is there twice."""
    async with RedisServer() as server, \
            connect(server.url, poll_interval=0.2, timeout=1.0) as client:
        q: QueueCell[Any] = client.queue(fresh("paused-redis"))
        await q.push("first")
        await server.pause()
        try:
            with pytest.raises(BrokerUnavailable, match=r"did not answer while .*"
                               r"socket timeout .*whether it applied is unknown"):
                await q.push("second")
        finally:
            server.resume()
        await q.push("third")
        taken = [await q.pop(timeout=5), await q.pop(timeout=5)]
        if taken[1] == "second":
            taken.append(await q.pop(timeout=5))
        assert taken in (["first", "second", "third"], ["first", "third"])
