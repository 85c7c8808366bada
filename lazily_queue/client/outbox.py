"""Outbox: frames for one link, sent in order without making the sender wait.

A frame goes out at once when nothing is queued and the link's buffer has room;
otherwise it is queued and a writer task sends it when the link drains. More than
``limit`` queued bytes (the other end does not read) closes the outbox and calls
``on_overflow``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

import anyio
from lazily_transports import LinkStream


class Outbox:
    """Ordered, non-blocking sending on one link (module docstring)."""

    def __init__(self, stream: LinkStream, *, limit: int,
                 on_overflow: Callable[[int], None] | None = None) -> None:
        self.stream = stream
        self.limit = limit
        self._on_overflow = on_overflow
        self._queue: deque[bytes] = deque()
        self.queued = 0
        self.closed = False
        self._ready = asyncio.Event()
        self._writer = asyncio.ensure_future(self._write())

    def send(self, data: bytes) -> None:
        """Send or queue ``data``; nothing happens once closed."""
        if self.closed:
            return
        if not self._queue:
            try:
                self.stream.send_nowait(data)
                return
            except anyio.WouldBlock:
                pass
            except Exception:  # the link is gone: whoever reads it sees that
                self.close()
                return
        self._queue.append(data)
        self.queued += len(data)
        self._ready.set()
        if self.queued > self.limit:
            queued = self.queued
            self.close()
            if self._on_overflow is not None:
                self._on_overflow(queued)

    def flush(self) -> None:
        """Hand what was sent to the link's connection now rather than later in this
        loop iteration (before the caller wakes other processes)."""
        if not self.closed:
            try:
                self.stream.flush()
            except Exception:  # the link is gone: whoever reads it sees that
                self.close()

    async def _write(self) -> None:
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                while self._queue:
                    data = self._queue[0]
                    await self.stream.send(data)
                    self._queue.popleft()
                    self.queued -= len(data)
        except Exception:
            self.close()

    def close(self) -> None:
        """Drop what is queued and close the link."""
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        self.queued = 0
        self._writer.cancel()
        task = asyncio.ensure_future(self.stream.aclose())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def wait_closed(self) -> None:
        with contextlib.suppress(BaseException):
            await self._writer
