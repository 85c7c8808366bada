"""A loopback TCP proxy in front of a nats-server that drops, while closed, every message
a client publishes to one subject: the server sees no request and sends no answer, as
a subject no one listens on yet under the JetStream API's wildcard. It reads the
client's protocol (control lines and payloads), so it records the subjects published."""

from __future__ import annotations

import asyncio
import contextlib

from lazily_queue.brokers.servers import free_port


class RequestGate:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target``, dropping publishes to
    ``subject`` until :meth:`open`."""

    def __init__(self, target: int, subject: str) -> None:
        self.target = target
        self.port = free_port()
        self.subject = subject.encode()
        self.closed = True
        self.dropped = 0
        #: Every subject a client published to, in order (dropped ones included).
        self.published: list[str] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def open(self) -> None:
        self.closed = False

    async def __aenter__(self) -> RequestGate:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _filter(self, buffer: bytearray) -> bytes:
        """The whole commands at the head of ``buffer`` (removed from it) to forward."""
        out = bytearray()
        while (end := buffer.find(b"\r\n")) >= 0:
            line = bytes(buffer[:end + 2])
            words = line.split()
            size = 0
            if words and words[0].upper() in (b"PUB", b"HPUB"):
                size = int(words[-1]) + 2
                if len(buffer) < len(line) + size:
                    break
                self.published.append(words[1].decode())
            command = bytes(buffer[:len(line) + size])
            del buffer[:len(line) + size]
            if size and words[1] == self.subject and self.closed:
                self.dropped += 1
                continue
            out += command
        return bytes(out)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        done = asyncio.Event()
        pending = bytearray()

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                       requests: bool) -> None:
            try:
                while data := await src.read(65536):
                    if requests:
                        pending.extend(data)
                        data = self._filter(pending)
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                done.set()

        tasks = [asyncio.ensure_future(pipe(reader, up_writer, True)),
                 asyncio.ensure_future(pipe(up_reader, writer, False))]
        self._tasks.update(tasks)
        await done.wait()
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            w.close()
            with contextlib.suppress(Exception):
                await w.wait_closed()
        self._tasks.difference_update(tasks)
