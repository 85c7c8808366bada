"""A client's topic stream across a relink to a member that applied less: the new
member's copy of the topic (its subscriber's cursor behind what the stream handed out
and committed) does not make the stream hand out those elements again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_a_stream_does_not_go_back_when_a_lagging_member_resets_the_mirror() -> None:
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        topic = client.topic("prices")
        await topic.subscribe("s")
        await topic.publish_many(list(range(10)))
        mirror = client._mirror
        installs: list[tuple[Any, int, Any]] = []
        installed = asyncio.Event()
        install = mirror.install

        def recording(key: Any, index: int, doc: Any) -> None:
            installs.append((key, index, doc))
            installed.set()
            install(key, index, doc)

        mirror.install = recording  # type: ignore[method-assign]
        await client.barrier()
        assert topic.read_stream("s") == list(range(10))
        client._request_watch(("topic", "prices"))  # the member's copy, as of now
        await asyncio.wait_for(installed.wait(), 10)
        stale = installs[-1]  # cursor 0, elements 0..9
        got: list[int] = []
        stream = topic.stream("s", batch=4)
        while len(got) < 10:
            got.append(await anext(stream))
        nxt = asyncio.ensure_future(anext(stream))  # commits the last batch, then waits
        await client.barrier()
        assert not nxt.done()
        # A relink to a member that applied less: its copy's cursor is back at 0.
        mirror.install(*stale)
        await asyncio.sleep(0.05)
        await topic.publish(10)
        assert await asyncio.wait_for(nxt, 10) == 10
        got.append(10)
        assert got == list(range(11))
        await stream.aclose()


async def test_a_stream_replays_after_a_seek_back_without_a_relink() -> None:
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        topic = client.topic("prices")
        await topic.subscribe("s")
        await topic.publish_many(list(range(4)))
        stream = topic.stream("s", batch=2)
        got = [await anext(stream) for _ in range(4)]
        nxt = asyncio.ensure_future(anext(stream))  # commits the last batch, then waits
        await client.barrier()
        assert await topic.seek("s", 1) == 1  # the subscriber asks for a replay
        got.append(await asyncio.wait_for(nxt, 10))
        assert got == [0, 1, 2, 3, 1]
        await stream.aclose()
