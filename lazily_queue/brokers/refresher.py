"""Refresher: runs a broker object's refreshes one at a time, coalesced, on demand and
every ``poll_interval`` seconds (see :mod:`.mirror`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ..errors import shown

log = logging.getLogger(__name__)

#: Least seconds between two refreshes (they coalesce the changes made meanwhile).
MIN_INTERVAL = 0.005
#: Seconds closing waits for a refresh under way to stop.
STOP_WAIT = 5.0


class Refresher:
    """Runs ``refresh()`` on demand, coalesced, and every ``poll_interval`` seconds."""

    def __init__(
        self, refresh: Callable[[], Awaitable[None]], *, poll_interval: float, name: str
    ) -> None:
        if poll_interval <= 0:
            raise ValueError(f"poll_interval must be > 0, got {shown(poll_interval)}")
        self._refresh = refresh
        self.poll_interval = poll_interval
        self.name = name
        self._requested = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self.failures = 0
        #: The error of the last refresh, ``None`` once one succeeded.
        self.last_error: BaseException | None = None

    def start(self) -> None:
        """Start refreshing on the running loop (idempotent; a no-op without one)."""
        if self._task is not None or self._stopped:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._wake = asyncio.Event()
        self._wake.set()
        self._task = loop.create_task(self._run(), name=f"refresh {self.name}")

    def poke(self) -> None:
        """Ask for a refresh soon (coalesced with any other request)."""
        self._requested += 1
        if self._wake is None:
            self.start()
        if self._wake is not None:
            self._wake.set()

    async def sync(self) -> None:
        """Return once a refresh that started after this call has finished; raises the
        error of that refresh when it failed."""
        if self._stopped:
            raise RuntimeError(f"{self.name}: the storage is closed")
        self.poke()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((self._requested, future))
        await future

    async def stop(self) -> None:
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=STOP_WAIT)
            if not done:  # a refresh that went on after its cancellation: left to end
                log.warning("%s: the refresh did not stop within %ss", self.name, STOP_WAIT)
            elif not task.cancelled() and task.exception() is not None:
                log.warning("%s: the refresh ended with %r", self.name, task.exception())
        for _, future in self._waiters:
            if not future.done():
                future.set_exception(RuntimeError(f"{self.name}: the storage was closed"))
        self._waiters.clear()

    async def _run(self) -> None:
        assert self._wake is not None
        wake = self._wake
        backoff = 0.05
        while not self._stopped:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_interval):
                    await wake.wait()
            if self._stopped:
                return
            wake.clear()
            generation = self._requested
            error: BaseException | None = None
            try:
                await self._refresh()
            except asyncio.CancelledError:
                if self._stopped or _being_cancelled():
                    raise
                error = _interrupted(self.name)  # a call it awaited was cancelled
            except Exception as exc:
                error = exc
            if error is not None:
                self.failures += 1
                if self.failures == 1 or self.failures % 100 == 0:
                    log.warning("%s: refresh failed (%d so far): %s", self.name,
                                self.failures, error)
            self.last_error = error
            self._settle(generation, error)
            if error is None:
                backoff = 0.05
                await asyncio.sleep(MIN_INTERVAL)
            else:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.poll_interval)

    def _settle(self, generation: int, error: BaseException | None) -> None:
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for target, future in self._waiters:
            if future.done():
                continue
            if target <= generation:
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)
            else:
                keep.append((target, future))
        self._waiters = keep


def _being_cancelled() -> bool:
    """Whether the running task was asked to stop (not just handed a CancelledError by
    a call it awaited, which another task cancelled)."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _interrupted(name: str) -> Exception:
    from .errors import BrokerUnavailable

    return BrokerUnavailable(f"{name}: the refresh was interrupted (a call it awaited was "
                             "cancelled); try again")
