"""A work queue's reader bits live in one place (core.work_masks): a wholesale change
(the queue deleted, a backend reset) invalidates every reader a cell has."""

from __future__ import annotations

from lazily_queue import Limits, WorkQueueCell, admin, testing
from lazily_queue.core.work_masks import ALL_WORK_READERS, DROPPED, HELD_BYTES
from lazily_queue.reactive import computed
from tests.clock import FakeClock


def test_all_work_readers_are_the_readers_of_every_cell() -> None:
    plain = WorkQueueCell(clock=FakeClock())
    limited = WorkQueueCell(clock=FakeClock(), limits=Limits(max_length=3))
    assert plain._group.all_bits() == ALL_WORK_READERS
    assert limited._group.all_bits() == ALL_WORK_READERS | HELD_BYTES | DROPPED


async def test_deleting_a_work_queue_invalidates_its_delayed_and_expired_readers() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        w = node.work_queue("w", visibility_timeout=30)
        await w.push("later", delay=3600)
        seen = computed(lambda: (w.delayed_len(), w.pending_len()), context=w.ctx)
        assert seen() == (1, 0)
        assert await admin.delete(node, "work_queue", "w") == 1  # the delayed item
        assert seen() == (0, 0)
