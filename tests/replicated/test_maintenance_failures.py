"""A leader's maintenance rounds that keep failing (a stalled disk) are logged once."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from lazily_queue.maintenance import Maintenance
from lazily_queue.raft.errors import NoQuorum, StorageUnavailable


class _Rounds(Maintenance):
    """Rounds whose outcomes are scripted: an exception to raise, or None (success)."""

    def __init__(self, outcomes: list[BaseException | None]) -> None:
        super().__init__(SimpleNamespace(node_id="1", is_leader=True,  # type: ignore[arg-type]
                                         topic_gc_interval=60.0))
        self.outcomes = outcomes
        self.done = asyncio.Event()

    async def once(self, gc_topics: bool) -> None:
        if not self.outcomes:
            self.done.set()
            return
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome


async def test_a_failure_repeating_is_logged_once_until_a_round_succeeds(
        caplog: pytest.LogCaptureFixture) -> None:
    stalled = StorageUnavailable("node 1 cannot write its journal: No space left on device")
    rounds = _Rounds([stalled] * 50 + [None] + [stalled] * 3 + [NoQuorum("no quorum")] * 3)
    caplog.set_level(logging.INFO, logger="lazily_queue.maintenance")
    task = asyncio.create_task(rounds._run(0.0))
    await asyncio.wait_for(rounds.done.wait(), 10)
    task.cancel()
    lines = [r.getMessage() for r in caplog.records if "maintenance round skipped" in r.message]
    assert len(lines) == 3, lines  # the disk, the disk again after a success, no quorum
    assert "No space left on device" in lines[0] and "no quorum" in lines[2], lines
