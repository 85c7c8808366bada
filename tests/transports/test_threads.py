"""In-memory links between two threads, each running its own event loop."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from lazily_transports import LinkAttribute, LinkStream, dial, listen
from transport_helpers import make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)


def _new_loop() -> asyncio.AbstractEventLoop:
    if os.environ.get("LAZILY_TEST_LOOP") == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


@contextmanager
def loop_thread(
    main: Callable[[asyncio.Event, threading.Event], Coroutine[Any, Any, None]],
) -> Iterator[threading.Event]:
    """Run ``main(stop, ready)`` in a thread with its own loop until the block exits."""
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def run() -> None:
        loop = _new_loop()
        stop = asyncio.Event()
        holder["loop"], holder["stop"] = loop, stop
        try:
            loop.run_until_complete(main(stop, ready))
        except BaseException as exc:
            holder["error"] = exc
            ready.set()
        finally:
            loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield ready
    finally:
        if "loop" in holder and not holder["loop"].is_closed():
            holder["loop"].call_soon_threadsafe(holder["stop"].set)
        thread.join(10)
        assert not thread.is_alive(), "the peer thread did not stop"
        if "error" in holder:
            raise holder["error"]


async def _echo(channel: LinkStream) -> None:
    try:
        while True:
            await channel.send(await channel.receive())
    except anyio.EndOfStream:
        pass


async def _wait_ready(ready: threading.Event) -> None:
    await asyncio.get_running_loop().run_in_executor(None, ready.wait, 10)


async def test_echo_across_threads_keeps_order_under_backpressure() -> None:
    address = unique_memory_address()
    small = {"send_buffer_size": 2048, "receive_buffer_size": 2048}

    async def peer(stop: asyncio.Event, ready: threading.Event) -> None:
        async with listen(address, make_config(2, **small), _echo):
            ready.set()
            await stop.wait()

    with loop_thread(peer) as ready:
        await _wait_ready(ready)
        channel = await dial(address, make_config(1, **small))
        assert channel.extra(LinkAttribute.peer_id) == 2
        frames = [i.to_bytes(4, "big") * (i % 64) for i in range(20000)]

        async def produce() -> None:
            for frame in frames:
                await channel.send(frame)

        sending = asyncio.create_task(produce())
        with anyio.fail_after(20):
            echoed = [await channel.receive() for _ in frames]
        await sending
        assert echoed == frames
        await channel.aclose()


async def test_close_is_seen_across_threads() -> None:
    address = unique_memory_address()
    outcome: list[str] = []
    finished = threading.Event()

    async def peer(stop: asyncio.Event, ready: threading.Event) -> None:
        async def handler(channel: LinkStream) -> None:
            try:
                await channel.receive()
            except anyio.EndOfStream:
                outcome.append("end of stream")
            finished.set()

        async with listen(address, make_config(2), handler):
            ready.set()
            await stop.wait()

    with loop_thread(peer) as ready:
        await _wait_ready(ready)
        channel = await dial(address, make_config(1))
        await channel.aclose()
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, finished.wait, 5)
    assert outcome == ["end of stream"]
