"""Async glue built on effects: await a change, wait for a predicate, iterate values.

Every helper creates an effect and disposes it when the await finishes, fails or is
cancelled, so a cancelled waiter leaves no edge behind. Effects run on the thread that
writes, so the nodes must belong to the running event loop's thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

from .context import Context, resolve_context
from .effects import Effect
from .nodes import Computed, Source
from .slots import Slot

T = TypeVar("T")

Readable = Source[T] | Slot[T] | Computed[T]


async def changed(node: Readable[T], *, timeout: float | None = None) -> T:
    """Wait for the next change of ``node`` and return its new value.

    A change is a version bump seen by an effect: a Source or Computed whose value
    moved, or any invalidation of a Slot.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    first = True

    def watch() -> None:
        nonlocal first
        value = node.get()
        if first:
            first = False
        elif not future.done():
            future.set_result(value)

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
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def watch() -> None:
        if future.done():
            return
        try:
            value = predicate()
        except BaseException as exc:  # surface predicate errors to the waiter
            future.set_exception(exc)
            return
        if value:
            future.set_result(value)

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
    wake = asyncio.Event()
    latest: list[Any] = []

    def watch() -> None:
        latest[:] = [node.get()]
        wake.set()

    eff = Effect(watch, context=node.ctx, name=f"values({node.name})")
    try:
        while True:
            await wake.wait()
            wake.clear()
            yield latest[0]
    finally:
        eff.dispose()
