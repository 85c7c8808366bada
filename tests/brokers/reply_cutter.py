"""A loopback TCP proxy that can cut a connection after the request reached the server
and before its reply reaches the client (the reply of an applied operation is lost)."""

from __future__ import annotations

import asyncio
import contextlib

from lazily_queue.brokers.servers import free_port


class ReplyCutter:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target``. After :meth:`arm`, the first
    request containing ``marker`` is forwarded, the server's next reply on that
    connection is dropped and the connection closed (both ways); every other connection
    and later request is forwarded normally."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self.cut = 0
        self._marker: bytes | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def arm(self, marker: bytes) -> None:
        self._marker = marker

    async def __aenter__(self) -> ReplyCutter:
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
        doomed = False

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                       replies: bool) -> None:
            nonlocal doomed
            try:
                while data := await src.read(65536):
                    if replies and doomed:
                        self.cut += 1
                        return
                    if not replies and self._marker is not None and self._marker in data:
                        self._marker = None
                        doomed = True
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                done.set()

        tasks = [asyncio.ensure_future(pipe(reader, up_writer, False)),
                 asyncio.ensure_future(pipe(up_reader, writer, True))]
        self._tasks.update(tasks)
        await done.wait()
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            w.close()
            with contextlib.suppress(Exception):
                await w.wait_closed()
        self._tasks.difference_update(tasks)
