"""State watchers run after every step, on the loop, with no task per step."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace

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


def test_leadership_clock_keeps_one_record_however_many_terms_it_led() -> None:
    engine = SimpleNamespace(is_leader=True, term=0, commit_index=0)
    journal = SimpleNamespace(term_at=lambda index: engine.term)
    node = SimpleNamespace(driver=SimpleNamespace(replica=SimpleNamespace(
        engine=engine, journal=journal)))
    clock = LeadershipClock(node)  # type: ignore[arg-type]
    for term in range(1, 1001):  # a leader change every few minutes, for days
        engine.term = term
        clock.observe()
        clock.observe()
    assert len(clock.terms) == 1
    latest = clock.latest()
    assert latest is not None and latest["term"] == 1000
    assert latest["first_commit"] is not None
