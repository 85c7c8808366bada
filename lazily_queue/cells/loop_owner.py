"""The event loop a cell's awaitables run on.

A cell is not locked: its reactive context (shared by the cells made with it) belongs
to one running event loop at a time, the first one that awaits one of its cells, until
that loop stops (:meth:`~lazily_queue.reactive.Context.claim_loop`). An awaitable
called on another loop while that one runs raises :class:`ThreadSafetyError` before it
does anything: a local cell would otherwise wake a waiter of the other loop from the
wrong thread (a pop that never returns), and a node's would race its node's loop.
"""

from __future__ import annotations

import asyncio
import threading
from asyncio import _get_running_loop
from threading import get_ident

from ..errors import ThreadSafetyError
from ..reactive import Context


class LoopOwned:
    """Mixed into every cell (which sets ``ctx`` and ``name``)."""

    ctx: Context
    name: str

    def _own(self) -> None:
        """Raise :class:`ThreadSafetyError` unless this call's event loop may use the
        cell (module docstring); the first loop to ask takes it. The thread is compared
        first: reading the running loop costs a system call (``getpid``) on Python 3.11."""
        if get_ident() != self.ctx.thread:
            running = _get_running_loop()
            if not self.ctx.claim_loop(running):
                raise other_loop(self, running)


def other_loop(cell: LoopOwned, running: asyncio.AbstractEventLoop | None) -> ThreadSafetyError:
    """The error of ``cell`` awaited on ``running`` while another loop holds it."""
    ctx = cell.ctx
    here = threading.current_thread().name
    return ThreadSafetyError(
        f"{type(cell).__name__} {cell.name!r} runs on another event loop than this call's: "
        f"on {ctx.loop!r} in thread {ctx.loop_thread!r}, the loop that first awaited a "
        f"cell of its reactive context {ctx.name!r} and is still running, while this call "
        f"runs in thread {here!r}. Cells are not thread-safe: await them on that loop "
        "(from another thread, `asyncio.run_coroutine_threadsafe(coro, loop)`, "
        "`loop.call_soon_threadsafe`, or a blocking handle made there with "
        "`cell.threadsafe()`), run every cell on one loop, or give each loop cells of "
        "its own (made in its thread, or with `context=Context()`); nothing was sent "
        "or applied")


__all__ = ["LoopOwned", "other_loop"]
