"""Background: a component's one background task, started once and stopped by
cancelling it and waiting for it to end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any


class Background:
    """Mixin: ``_start_task(run, name)`` starts ``run()`` unless it runs already;
    ``stop()`` cancels it and waits for it (idempotent; a later start runs it again)."""

    _task: asyncio.Task[None] | None = None

    def _start_task(self, run: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        if self._task is None:
            self._task = asyncio.create_task(run(), name=name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
