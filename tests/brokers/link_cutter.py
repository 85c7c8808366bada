"""A proxy to a NATS server whose link can be cut and mended, and a bounded wait."""

from __future__ import annotations

import asyncio
from typing import Any

from .loopback_proxy import Forward, LoopbackProxy


class LinkCutter(LoopbackProxy):
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target`` until :meth:`cut`, which ends
    every connection and every new one at once until :meth:`mend`."""

    down = False

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def forwards(self) -> tuple[Forward, Forward]:
        def forward(data: bytes) -> bytes | None:
            return None if self.down else data

        return forward, forward

    def cut(self) -> None:
        self.down = True
        for task in list(self._tasks):
            task.cancel()

    def mend(self) -> None:
        self.down = False


async def wait_for(condition: Any, what: str) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
