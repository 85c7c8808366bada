"""A cancelled Redis pop's put-back that fails on the way is sent again until it applies,
and applies once: the elements come back at the head, neither lost nor doubled."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue import connect
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh
from .reply_cutter import ReplyCutter
from .test_cancelled_pop import _cancel_a_pop


async def _put_back_through(cutter: ReplyCutter, name: str, *, before_server: bool) -> int:
    """Through ``cutter``: a first cancelled pop whose put-back goes through (the server
    loads the script), then two elements pushed, the first request carrying the head one
    cut after that, a pop cancelled, and the client closed (it waits for put-backs); the
    number of cuts made."""
    url = f"redis://127.0.0.1:{cutter.port}/0"
    async with connect(url, poll_interval=0.2) as client:
        queue = client.queue(name)
        await queue.push("warm")
        await _cancel_a_pop(queue)
        assert await queue.pop(timeout=5) == "warm"  # after its put-back applied
        for value in ("marker-head", "tail"):
            await queue.push(value)
        cutter.arm(b"marker-head", before_server=before_server)
        await _cancel_a_pop(queue)
        for _ in range(200):  # the pop ran, then its put-back was cut
            if cutter.cut:
                break
            await asyncio.sleep(0.01)
    return cutter.cut


async def _contents(redis_server: BrokerServer, name: str) -> list[object]:
    async with connect(redis_server.url) as client:
        queue = client.queue(name)
        await queue.storage.sync()  # type: ignore[attr-defined]
        out = []
        while queue.storage.len():
            out.append(await queue.pop(timeout=5))
            await queue.storage.sync()  # type: ignore[attr-defined]
        return out


@pytest.mark.parametrize("before_server", [True, False], ids=["request-lost", "reply-lost"])
async def test_a_put_back_cut_on_its_way_comes_back_once(
        redis_server: BrokerServer, before_server: bool) -> None:
    """Cut before the server (it never applied: sent again) or after it (it applied:
    the attempt sent again applies nothing)."""
    name = fresh("put-back")
    async with ReplyCutter(redis_server.port) as cutter:
        assert await _put_back_through(cutter, name, before_server=before_server) == 1
    assert await _contents(redis_server, name) == ["marker-head", "tail"]
