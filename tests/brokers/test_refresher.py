"""The broker mirrors' refresher: closing never waits on a refresh for good."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue.brokers import mirror
from lazily_queue.brokers.mirror import Refresher


async def test_stop_returns_when_a_refresh_goes_on_after_its_cancellation(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(mirror, "STOP_WAIT", 0.2, raising=False)
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
