"""Thread-safe entry: use cells owned by an event loop from other threads.

A cell and its reactive context belong to one event loop and are not locked. A
:class:`LoopBridge` runs a call (or a coroutine) on the owning loop and blocks the
calling thread until it finishes, so every mutation and every reader invalidation
still happens on the loop thread, in the order the loop runs them.

Rules:

- Call bridge methods from threads other than the loop's. From the loop thread the
  wait could never finish, so it raises :class:`ThreadSafetyError` instead of
  deadlocking; code on the loop uses the cell directly.
- A call on a loop that is not running (never started, stopped or closed) raises
  :class:`LoopNotRunning`, and so does a wait whose loop stops before answering.

``QueueCell.threadsafe()`` returns a typed :class:`ThreadSafeQueue`;
``TopicCell.threadsafe()`` and ``WorkQueueCell.threadsafe()`` return a
:class:`ThreadSafeCell`, a blocking proxy for any cell.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .errors import LazilyQueueError, ThreadSafetyError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from .cells.message import Message
    from .cells.queue import QueueCell
    from .core.queue import QueuePopError, QueuePushError

T = TypeVar("T")

_POLL_INTERVAL = 0.05


class LoopNotRunning(LazilyQueueError, RuntimeError):
    """The owning event loop is not running, or stopped before the call finished."""


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LoopBridge:
    """Runs calls on ``loop`` from other threads and waits for their results.

    ``loop`` defaults to the loop running in the calling thread, so create the bridge
    on the loop (for example next to the cell) and hand it to the threads.
    """

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if loop is None:
            loop = _running_loop()
            if loop is None:
                raise LoopNotRunning(
                    "no event loop runs in this thread: make the blocking handle on the "
                    "cell's event loop (`cell.threadsafe()` there, then hand it to the "
                    "thread), or pass it that loop (`cell.threadsafe(loop)`, "
                    "`LoopBridge(loop)`)"
                )
        self._loop = loop

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def _check(self, what: str) -> None:
        loop = self._loop
        if _running_loop() is loop:
            raise ThreadSafetyError(
                f"{what} was called on the event loop thread that owns the cell; a blocking "
                "wait there would deadlock. Use the cell (or its async methods) directly"
            )
        if loop.is_closed() or not loop.is_running():
            state = "closed" if loop.is_closed() else "not running"
            raise LoopNotRunning(f"{what}: the owning event loop is {state}")

    def call(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """Run ``fn(*args)`` on the loop thread and return its result (or raise its error)."""
        self._check(getattr(fn, "__name__", "call"))
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)

        try:
            self._loop.call_soon_threadsafe(run)
        except RuntimeError as exc:  # closed between the check and the call
            raise LoopNotRunning(f"the owning event loop refused the call: {exc}") from exc
        return self._wait(future, timeout)

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run ``coro`` as a task on the loop and return its result.

        On timeout the task is cancelled and :class:`TimeoutError` is raised.
        """
        try:
            self._check(getattr(coro, "__name__", "coroutine"))
        except BaseException:
            coro.close()
            raise
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return self._wait(future, timeout)

    def _wait(self, future: concurrent.futures.Future[T], timeout: float | None) -> T:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = _POLL_INTERVAL
            if deadline is not None:
                remaining = min(remaining, deadline - time.monotonic())
                if remaining <= 0:
                    future.cancel()
                    raise TimeoutError(f"no answer from the event loop within {timeout}s")
            try:
                return future.result(remaining)
            except concurrent.futures.TimeoutError:
                if future.done():  # the call itself raised TimeoutError
                    raise
                if not self._loop.is_running():
                    future.cancel()
                    raise LoopNotRunning(
                        "the owning event loop stopped before the call finished"
                    ) from None
            except concurrent.futures.CancelledError:
                raise LoopNotRunning("the call was cancelled on the event loop") from None


class ThreadSafeQueue(Generic[T]):
    """Blocking, thread-safe access to a :class:`~lazily_queue.QueueCell` on its loop.

    The names follow the cell's: ``push``/``pop`` wait on the loop (while full / until
    an element arrives) and block this thread meanwhile; ``offer``/``poll``/``close``
    do not wait; all five work on every backend. ``try_push``/``try_pop``/``try_close``
    are the synchronous core, on backends that declare it. ``timeout`` raises
    :class:`TimeoutError`; closed queues raise :class:`~lazily_queue.QueueClosed`
    exactly like the async methods.
    """

    __slots__ = ("_bridge", "_cell")

    def __init__(self, cell: QueueCell[T], bridge: LoopBridge) -> None:
        self._cell = cell
        self._bridge = bridge

    @property
    def bridge(self) -> LoopBridge:
        return self._bridge

    def try_push(self, value: T) -> QueuePushError | None:
        return self._bridge.call(self._cell.try_push, value)

    def try_pop(self) -> T | QueuePopError:
        return self._bridge.call(self._cell.try_pop)

    def try_close(self) -> None:
        self._bridge.call(self._cell.try_close)

    def offer(self, value: T, timeout: float | None = None, *,
              msg_id: str | None = None, ttl: float | None = None,
              headers: Mapping[str, str] | None = None, delay: float | None = None,
              not_before: datetime | None = None) -> QueuePushError | None:
        """The cell's ``offer`` (its options combine, see :meth:`QueueCell.offer`)."""
        return self._bridge.run(self._cell.offer(value, msg_id=msg_id, ttl=ttl,
                                                 timeout=timeout, headers=headers,
                                                 delay=delay, not_before=not_before))

    def poll(self, timeout: float | None = None) -> T | QueuePopError:
        return self._bridge.run(self._cell.poll(timeout=timeout))

    def close(self, timeout: float | None = None) -> None:
        self._bridge.run(self._cell.close(timeout=timeout))

    def push(self, value: T, timeout: float | None = None, *, msg_id: str | None = None,
             ttl: float | None = None, headers: Mapping[str, str] | None = None,
             delay: float | None = None, not_before: datetime | None = None) -> None:
        """The cell's ``push`` (its options combine, see :meth:`QueueCell.push`)."""
        self._bridge.run(self._cell.push(value, msg_id=msg_id, ttl=ttl, timeout=timeout,
                                         headers=headers, delay=delay,
                                         not_before=not_before))

    def delayed_len(self) -> int:
        """Elements committed and not due yet."""
        return self._bridge.call(self._cell.delayed_len.get)

    def pop(self, timeout: float | None = None) -> T:
        return self._bridge.run(self._cell.pop(timeout=timeout))

    def pop_message(self, timeout: float | None = None) -> Message[T]:
        """:meth:`pop` as a :class:`~lazily_queue.Message` (its id and enqueue time)."""
        return self._bridge.run(self._cell.pop_message(timeout=timeout))

    def __len__(self) -> int:
        return self._bridge.call(self._cell.len.get)

    def is_closed(self) -> bool:
        return self._bridge.call(self._cell.is_closed.get)


class ThreadSafeCell:
    """Blocking proxy for any cell: ``proxy.name(...)`` runs ``cell.name(...)`` on the loop.

    Plain methods and readers (slots are callable) run through :meth:`LoopBridge.call`;
    coroutine methods (``publish``, ``claim``, ...) run as tasks through
    :meth:`LoopBridge.run` and accept an extra ``bridge_timeout`` keyword.
    Non-callable attributes are not proxied.
    """

    __slots__ = ("_bridge", "_cell")

    def __init__(self, cell: object, bridge: LoopBridge) -> None:
        self._cell = cell
        self._bridge = bridge

    @property
    def bridge(self) -> LoopBridge:
        return self._bridge

    def __repr__(self) -> str:
        return f"ThreadSafeCell({self._cell!r})"

    def __getattr__(self, name: str) -> Callable[..., Any]:
        target = getattr(self._cell, name)
        bridge = self._bridge
        if inspect.iscoroutinefunction(target):

            def run(*args: Any, bridge_timeout: float | None = None, **kwargs: Any) -> Any:
                return bridge.run(target(*args, **kwargs), timeout=bridge_timeout)

            return run
        if callable(target):

            def call(*args: Any, **kwargs: Any) -> Any:
                return bridge.call(functools.partial(target, *args, **kwargs))

            return call
        raise AttributeError(
            f"{type(self._cell).__name__}.{name} is not callable; only methods and readers "
            "are proxied to the loop thread"
        )
