"""State watchers run after every step, on the loop, with no task per step."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.state_log import StateLog
from lazily_queue.status import LeadershipClock


async def test_observers_see_every_step_and_a_failing_one_stops_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        driver = leader.driver
        seen: list[int] = []

        def broken() -> None:
            raise RuntimeError("observer bug")

        driver.step_observers += [lambda: seen.append(driver.steps), broken]
        tasks = len(asyncio.all_tasks())
        for i in range(5):
            await leader.queue("q").push(i)
        assert len(seen) >= 5 and seen == sorted(seen)
        assert len(asyncio.all_tasks()) <= tasks  # no task woken per step
        assert "a step observer failed" in caplog.text
        assert leader.queue("q").len() == 5


async def test_leadership_clock_and_state_log_follow_the_steps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lazily_queue.state")
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        clock, state = LeadershipClock(leader), StateLog(leader)
        clock.start()
        state.start()
        clock.start()  # idempotent
        assert leader.driver.step_observers.count(clock.observe) == 1
        await leader.queue("q").push("x")
        latest = clock.latest()
        assert latest is not None and latest["first_commit"] is not None
        await clock.stop()
        await state.stop()
        assert leader.driver.step_observers == []
