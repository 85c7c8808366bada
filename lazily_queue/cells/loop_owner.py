"""The event loop a cell's awaitables run on.

A cell is not locked: its reactive context (shared by the cells made with it) belongs
to one running event loop at a time, the first one that awaits one of its cells, until
that loop stops (:meth:`~lazily_queue.reactive.Context.claim_loop`). An awaitable
called on another loop while that one runs raises :class:`ThreadSafetyError` before it
does anything: a local cell would otherwise wake a waiter of the other loop from the
wrong thread (a pop that never returns), and a node's would race its node's loop. In
asyncio's debug mode (:func:`thread_checks`), a synchronous call (``try_push``,
``try_claim``, ...) made while that loop runs, in another thread than the loop's, raises
it too, having applied nothing; it takes no loop, so with no loop holding the context
(or its loop stopped) any thread may make it. Outside debug mode the synchronous core
is not checked, as asyncio checks the thread of ``call_soon`` only in debug mode: the
check would cost a quarter of a local ``try_push`` + ``try_pop``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from asyncio import _get_running_loop
from collections.abc import Callable, Iterable
from threading import get_ident
from typing import Any, TypeVar, cast

from ..errors import ThreadSafetyError
from ..reactive import Context, resolve_context
from ..reactive.context import claim_loops

_Call = TypeVar("_Call", bound=Callable[..., Any])


def thread_checks() -> bool:
    """Whether cells made now check the thread of their synchronous calls: in asyncio's
    debug mode, ``python -X dev`` or ``PYTHONASYNCIODEBUG`` set (read as asyncio reads
    it for a new event loop), or made on a running loop in debug mode."""
    if sys.flags.dev_mode or (
            not sys.flags.ignore_environment and os.environ.get("PYTHONASYNCIODEBUG")):
        return True
    loop = _get_running_loop()
    return loop is not None and loop.get_debug()


class LoopOwned:
    """Mixed into every cell (which sets ``ctx`` and ``name``; a cell with a synchronous
    core through :meth:`_take_context`)."""

    ctx: Context
    name: str
    _checks_thread = False

    def _take_context(self, context: Context | None) -> None:
        """Use ``context`` (``None``: this thread's), and check the thread of the
        synchronous calls when :func:`thread_checks` says so now."""
        self.ctx = resolve_context(context)
        self._checks_thread = thread_checks()

    def _own(self) -> None:
        """Raise :class:`ThreadSafetyError` unless this call's event loop may use the
        cell (module docstring); the first loop to ask takes it. The thread and the
        holder's state are compared first: reading the running loop costs a system call
        (``getpid``) on Python 3.11."""
        ctx = self.ctx
        loop = ctx.loop
        if get_ident() != ctx.thread or loop is None or not loop.is_running():
            own((self,))

    def _checked(self, op: str, call: _Call) -> _Call:
        """``call`` (the synchronous ``op``), checking its thread first
        (:meth:`_at_home`) when this cell checks threads; else ``call`` itself."""
        if not self._checks_thread:
            return call
        at_home = self._at_home

        def checked(*args: Any) -> Any:
            at_home(op)
            return call(*args)
        return cast(_Call, checked)

    def _at_home(self, op: str) -> None:
        """Raise :class:`ThreadSafetyError` when the cell checks threads and the
        synchronous ``op`` is called in another thread than the one running the loop
        that holds the cell (module docstring)."""
        ctx = self.ctx
        if self._checks_thread and get_ident() != ctx.thread and ctx.loop is not None:
            self._away(op)

    def _away(self, op: str) -> None:
        """:meth:`_at_home` once the thread differs: refuse ``op`` unless no loop
        holds the context, the loop holding it stopped, or it runs in this thread."""
        loop = self.ctx.loop
        if loop is not None and loop.is_running() and _get_running_loop() is not loop:
            raise other_thread(self, op)


def own(cells: Iterable[LoopOwned]) -> None:
    """Let this call's event loop use every one of ``cells``, or raise
    :class:`ThreadSafetyError` having taken none: a node's or client's cell called off
    its loop (that check first), or a cell whose context another running loop holds."""
    running = _get_running_loop()
    claims: dict[Context, str] = {}
    owners: dict[Context, LoopOwned] = {}
    for cell in cells:
        by = _home(cell)
        owners.setdefault(cell.ctx, cell)
        claims.setdefault(cell.ctx, by)
    refused = claim_loops(claims, running)
    if refused is not None:
        raise other_loop(owners[refused], running, claims[refused])


def _home(cell: LoopOwned) -> str:
    """What runs ``cell`` on a loop of its own, a node or a client (its check that this
    call runs there raises), or ``""`` for a local cell."""
    check: Callable[[], str] | None = getattr(
        getattr(cell, "_storage", None), "check_loop", None)
    return "" if check is None else check()


def other_loop(cell: LoopOwned, running: asyncio.AbstractEventLoop | None,
               by: str = "") -> ThreadSafetyError:
    """The error of ``cell`` (of ``by``, its node or client, or a local one: ``""``)
    awaited on ``running`` while another loop holds it."""
    ctx = cell.ctx
    here = threading.current_thread().name
    holder = f" (the loop of {ctx.loop_by})" if ctx.loop_by else ""
    shared = ""
    if ctx.loop_by or by:
        shared = (f"; {by or ctx.loop_by} takes the default reactive context of the "
                  "thread that made it, which the local cells made there without "
                  "`context=` share (give the node or those cells `context=Context()`)")
    return ThreadSafetyError(
        f"{type(cell).__name__} {cell.name!r} runs on another event loop than this call's: "
        f"on {ctx.loop!r} in thread {ctx.loop_thread!r}{holder}, the loop that first "
        f"awaited a cell of its reactive context {ctx.name!r} and is still running, while "
        f"this call runs in thread {here!r}{shared}. Cells are not thread-safe: await them "
        "on that loop "
        "(from another thread, `asyncio.run_coroutine_threadsafe(coro, loop)`, "
        "`loop.call_soon_threadsafe`, or a blocking handle made there with "
        "`cell.threadsafe()`), run every cell on one loop, or give each loop cells of "
        "its own (made in its thread, or with `context=Context()`); nothing was sent "
        "or applied")


def other_thread(cell: LoopOwned, op: str) -> ThreadSafetyError:
    """The error of ``cell``'s synchronous ``op`` called from a thread other than the
    one running the loop that holds it."""
    ctx = cell.ctx
    return ThreadSafetyError(
        f"{type(cell).__name__} {cell.name!r}: {op} was called in thread "
        f"{threading.current_thread().name!r} while the event loop holding the cell "
        f"runs in thread {ctx.loop_thread!r} ({ctx.loop!r}, the loop that first awaited "
        f"a cell of its reactive context {ctx.name!r}). Cells are not thread-safe: "
        f"call {op} on that loop, from this thread through a blocking handle made "
        f"there (`handle = {cell.name}.threadsafe()`, then `handle.{op}(...)`), or "
        f"schedule it there with `loop.call_soon_threadsafe`; nothing was applied")


__all__ = ["LoopOwned", "other_loop", "other_thread", "own", "thread_checks"]
