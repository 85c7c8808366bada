"""Background: a component's one background task, started once and stopped by
cancelling it and waiting for it to end; StepObserver: a component run after every
step of its node's driver."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from .raft.errors import NodeNotRunning

if TYPE_CHECKING:
    from .node import Node


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


class StepObserver:
    """Mixin for a component of ``self.node`` that runs ``observe()`` now and after every
    step of the node's driver, between ``start()`` and ``stop()``."""

    node: Node

    def observe(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Observe now and after every step of the running node."""
        observers = self.node.driver.step_observers
        if self.observe not in observers:
            self.observe()
            observers.append(self.observe)

    async def stop(self) -> None:
        with contextlib.suppress(NodeNotRunning, ValueError):
            self.node.driver.step_observers.remove(self.observe)
