"""A loopback TCP proxy whose subclasses decide, per connection, what of each side's
bytes goes on (:class:`~.reply_cutter.ReplyCutter`, :class:`~.request_gate.RequestGate`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Self

from lazily_queue.brokers.servers import free_port

#: What to forward of the bytes just read (``None``: end the connection, both ways).
Forward = Callable[[bytes], bytes | None]


class LoopbackProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target`` through :meth:`forwards`."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def forwards(self) -> tuple[Forward, Forward]:
        """A new connection's filters: of the client's bytes, and of the server's."""
        return (lambda data: data), (lambda data: data)

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        done = asyncio.Event()
        requests, replies = self.forwards()

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                       forward: Forward) -> None:
            try:
                while data := await src.read(65536):
                    kept = forward(data)
                    if kept is None:
                        return
                    dst.write(kept)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                done.set()

        tasks = [asyncio.ensure_future(pipe(reader, up_writer, requests)),
                 asyncio.ensure_future(pipe(up_reader, writer, replies))]
        self._tasks.update(tasks)
        await done.wait()
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            w.close()
            with contextlib.suppress(Exception):
                await w.wait_closed()
        self._tasks.difference_update(tasks)
