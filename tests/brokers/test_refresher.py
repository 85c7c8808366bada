"""The broker mirrors' refresher: closing never waits on a refresh for good."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue.brokers import refresher as refreshes
from lazily_queue.brokers.refresher import Refresher


async def test_stop_returns_when_a_refresh_goes_on_after_its_cancellation(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(refreshes, "STOP_WAIT", 0.2, raising=False)
    started, release = asyncio.Event(), asyncio.Event()

    async def stubborn() -> None:
        started.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue  # a refresh deaf to cancellation

    refresher = Refresher(stubborn, poll_interval=10, name="stubborn")
    refresher.start()
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(refresher.stop(), 5)
    assert "did not stop within 0.2s" in caplog.text
    release.set()
    await asyncio.sleep(0.01)


async def test_stop_after_a_plain_refresh_waits_for_its_cancellation() -> None:
    started = asyncio.Event()

    async def plain() -> None:
        started.set()
        await asyncio.Event().wait()

    refresher = Refresher(plain, poll_interval=10, name="plain")
    refresher.start()
    await asyncio.wait_for(started.wait(), 5)
    task = refresher._task
    await refresher.stop()
    assert task is not None and task.cancelled()


async def test_a_refresh_that_raises_cancelled_error_of_its_own_keeps_the_refresher() -> None:
    """A call the refresh awaited was cancelled by someone else (the refresher was not):
    the waiting sync fails typed, and the refresher goes on refreshing, so no later sync
    waits for good."""
    from lazily_queue.brokers import BrokerUnavailable

    calls = 0

    async def interrupted_once() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise asyncio.CancelledError  # an awaited future cancelled by another task

    refresher = Refresher(interrupted_once, poll_interval=10, name="interrupted")
    try:
        with pytest.raises(BrokerUnavailable, match="interrupted"):
            await asyncio.wait_for(refresher.sync(), 30)  # a hang, not a duration
        await asyncio.wait_for(refresher.sync(), 30)
        assert calls >= 2
    finally:
        await refresher.stop()
