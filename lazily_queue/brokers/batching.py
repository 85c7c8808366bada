"""Coalescing of concurrent calls into one broker round trip.

:class:`Coalescer` queues the arguments of the calls made while a batch is in flight
and sends them together as the next batch, in the order the calls were made: one
script call for many pushes, or many settlements. A lone call goes out at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

A = TypeVar("A")
R = TypeVar("R")


class Coalescer(Generic[A, R]):
    """Sends ``send(batch)`` for the calls queued meanwhile; ``send`` returns one result
    per argument, in order. When it raises, every call of that batch raises it."""

    def __init__(self, send: Callable[[list[A]], Awaitable[Sequence[R]]]) -> None:
        self._send = send
        self._queued: list[tuple[A, asyncio.Future[R]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def call(self, argument: A) -> R:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._queued.append((argument, future))
        if self._sender is None:
            self._sender = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                try:
                    results = await self._send([argument for argument, _ in batch])
                except asyncio.CancelledError:
                    for _, future in batch + self._queued:
                        future.cancel()
                    self._queued = []
                    raise
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            self._sender = None
