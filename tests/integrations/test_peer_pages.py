"""Reading the other members' vitals keeps going whatever a page address answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from lazily_queue import testing
from lazily_queue.peer_pages import PeerPages
from lazily_queue.replicated import ops


@asynccontextmanager
async def http_server(body: Callable[[], bytes]) -> AsyncIterator[str]:
    """A one-route HTTP server answering every request with 200 and ``body()``."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_hostile_page_does_not_stop_the_reading(tmp_path: Path) -> None:
    async with testing.cluster(3, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        others = [m for m in ("1", "2", "3") if m != node.node_id]
        good = {"node": others[1], "version": "x"}
        async with (http_server(lambda: b"[" * 200_000) as hostile,
                    http_server(lambda: json.dumps(good).encode()) as honest):
            for member, url in zip(others, (hostile, honest), strict=True):
                await node.driver.call(ops.MEMBER_PAGE, [member, url], timeout=5)
            pages = PeerPages(node, interval=0.05, timeout=2)
            pages.start()
            try:
                async with asyncio.timeout(10):
                    while pages.answers.get(others[1], {}).get("vitals") is None:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
                first = pages.answers[others[1]]["at"]
                async with asyncio.timeout(10):  # still polling after the hostile answers
                    while pages.answers[others[1]]["at"] == first:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
                assert pages.answers[others[0]]["vitals"] is None
                assert "JSON" in pages.answers[others[0]]["error"]
            finally:
                await pages.stop()
