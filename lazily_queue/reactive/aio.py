"""Async glue built on effects: await a change, wait for a predicate, iterate values.

Every helper creates an effect and disposes it when the await finishes, fails or is
cancelled, so a cancelled waiter leaves no edge behind. A helper awaited while another
running event loop holds the context (:meth:`Context.claim_loop`) raises
:class:`ReactiveContextError`. Effects run on the thread that writes: a write made on
another thread wakes the waiter through its own loop (``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from threading import get_ident
from typing import Any, TypeVar

from .context import Context, ReactiveContextError, resolve_context
from .effects import Effect
from .nodes import Computed, Source
from .slots import Slot

T = TypeVar("T")

Readable = Source[T] | Slot[T] | Computed[T]


def _claim(ctx: Context, loop: asyncio.AbstractEventLoop) -> None:
    if ctx.loop is not loop and not ctx.claim_loop(loop):
        raise ReactiveContextError(
            f"context {ctx.name!r} is used by another running event loop (its thread "
            f"{ctx.loop_thread!r}): wait on that loop, or give this loop a context of "
            "its own")


def _on_loop(loop: asyncio.AbstractEventLoop, thread: int, wake: Callable[..., object],
             *args: Any) -> None:
    """Call ``wake(*args)`` on ``loop``, which runs in ``thread``: at once when this
    runs there, else through ``call_soon_threadsafe``; a closed loop's waiter is dropped
    (nothing is left to wake, and a later loop of the same thread may be the writer)."""
    if get_ident() == thread:
        if not loop.is_closed():
            wake(*args)
        return
    try:
        loop.call_soon_threadsafe(wake, *args)
    except RuntimeError:
        pass


def _settle(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[T], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


async def changed(node: Readable[T], *, timeout: float | None = None) -> T:
    """Wait for the next change of ``node`` and return its new value.

    A change is a version bump seen by an effect: a Source or Computed whose value
    moved, or any invalidation of a Slot.
    """
    loop, thread = asyncio.get_running_loop(), get_ident()
    _claim(node.ctx, loop)
    future: asyncio.Future[T] = loop.create_future()
    first = True

    def watch() -> None:
        nonlocal first
        value = node.get()
        if first:
            first = False
        elif not future.done():
            _on_loop(loop, thread, _settle, future, value)

    eff = Effect(watch, context=node.ctx, name=f"changed({node.name})")
    try:
        return await asyncio.wait_for(future, timeout)
    finally:
        eff.dispose()


async def wait_until(
    predicate: Callable[[], T],
    *,
    context: Context | None = None,
    timeout: float | None = None,
) -> T:
    """Wait until ``predicate()`` (tracked) returns a truthy value, and return it."""
    ctx = resolve_context(context)
    loop, thread = asyncio.get_running_loop(), get_ident()
    _claim(ctx, loop)
    future: asyncio.Future[T] = loop.create_future()

    def watch() -> None:
        if future.done():
            return
        try:
            value = predicate()
        except BaseException as exc:  # surface predicate errors to the waiter
            _on_loop(loop, thread, _fail, future, exc)
            return
        if value:
            _on_loop(loop, thread, _settle, future, value)

    eff = Effect(watch, context=ctx, name="wait_until")
    try:
        if future.done():
            return future.result()
        return await asyncio.wait_for(future, timeout)
    finally:
        eff.dispose()


async def values(node: Readable[T]) -> AsyncGenerator[T, None]:
    """Yield the current value, then the latest value after each change (conflating).

    The effect is disposed when the iterating task is cancelled or the generator is
    closed (``aclose()``, e.g. via ``contextlib.aclosing`` when breaking out early).
    """
    loop, thread = asyncio.get_running_loop(), get_ident()
    _claim(node.ctx, loop)
    wake = asyncio.Event()
    latest: list[Any] = []

    def watch() -> None:
        latest[:] = [node.get()]
        _on_loop(loop, thread, wake.set)

    eff = Effect(watch, context=node.ctx, name=f"values({node.name})")
    try:
        while True:
            await wake.wait()
            wake.clear()
            yield latest[0]
    finally:
        eff.dispose()
