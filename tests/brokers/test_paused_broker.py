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
from lazily_queue.brokers.servers import NatsServer, find_binary

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
