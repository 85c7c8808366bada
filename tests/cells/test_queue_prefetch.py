"""How much ``async for`` over a replicated queue takes per pop: the first pop a little,
more while the consumer hands batches out faster than a pop commits, less when it is
slower, never more than ``prefetch``."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from lazily_queue import QueueCell
from lazily_queue.core.fifo import Fifo
from lazily_queue.core.queue import POP, PUSH, UNPOP, QueuePopError
from lazily_queue.reactive import Context
from lazily_queue.storage import StorageCapabilities


class SlowCommits:
    """A fake replicated queue whose operations commit ``delay`` seconds later; records
    how many elements each pop asked for."""

    capabilities = StorageCapabilities(observable=True)

    def __init__(self, delay: float) -> None:
        self.fifo: Fifo[Any] = Fifo(None)
        self.delay = delay
        self.asked: list[int] = []
        self._listener: Any = None

    def set_change_listener(self, listener: Any) -> None:
        self._listener = listener

    def len(self) -> int:
        return self.fifo.len()

    def is_closed(self) -> bool:
        return self.fifo.is_closed()

    def capacity(self) -> None:
        return None

    def fill(self, values: range) -> None:
        for value in values:
            pre = self.fifo.len()
            self.fifo.try_push(value)
            self._listener(PUSH, pre)

    async def offer(self, value: Any, *, timeout: float | None = None) -> None:
        await asyncio.sleep(self.delay)
        self.fill(range(value, value + 1))

    async def poll(self, *, timeout: float | None = None) -> Any:
        raise AssertionError("iteration pops in batches")

    async def close(self, *, timeout: float | None = None) -> None:
        self.fifo.try_close()

    async def poll_many(self, n: int, *, timeout: float | None = None) -> Any:
        self.asked.append(n)
        await asyncio.sleep(self.delay)
        taken: list[Any] = []
        while len(taken) < n:
            pre = self.fifo.len()
            value = self.fifo.try_pop()
            if isinstance(value, QueuePopError):
                break
            self._listener(POP, pre)
            taken.append(value)
        return taken or QueuePopError.Empty

    async def unpoll(self, values: list[Any], *, timeout: float | None = None) -> None:
        for value in reversed(values):
            pre = self.fifo.len()
            self.fifo.push_front(value)
            self._listener(UNPOP, pre)


async def test_a_consumer_that_keeps_up_takes_more_per_pop_up_to_the_prefetch() -> None:
    storage = SlowCommits(0.1)
    q: QueueCell[int] = QueueCell(storage, context=Context())
    storage.fill(range(1000))
    got = []
    async with contextlib.aclosing(q.items(prefetch=100)) as items:
        async for value in items:
            got.append(value)
            if len(got) == 32 + 64 + 100 + 1:
                break
    assert storage.asked == [32, 64, 100, 100]
    assert got == list(range(len(got)))
    assert q.len() == 1000 - len(got)  # what was not handed out went back to the head


async def test_a_consumer_slower_than_a_commit_holds_fewer_elements() -> None:
    storage = SlowCommits(0.001)
    q: QueueCell[int] = QueueCell(storage, context=Context())
    storage.fill(range(100))
    got = []
    async with contextlib.aclosing(q.items(prefetch=8)) as items:
        async for value in items:
            got.append(value)
            await asyncio.sleep(0.02)  # each element takes far longer than a pop's commit
            if len(got) == 8 + 4 + 2 + 1:
                break
    assert storage.asked == [8, 4, 2, 1]
    assert q.len() == 100 - len(got)


def test_a_prefetch_below_one_is_refused() -> None:
    import pytest

    q: QueueCell[int] = QueueCell()
    with pytest.raises(ValueError, match="prefetch must be an int >= 1, got 0"):
        q.items(prefetch=0)
