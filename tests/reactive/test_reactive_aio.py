"""Async glue: ``changed``, ``wait_until`` and ``values``.

Each helper is an effect disposed when the await ends, fails or is cancelled, so the
watched node never keeps an observer behind. Runs on asyncio and on uvloop
(``LAZILY_TEST_LOOP=uvloop``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from lazily_queue.reactive import (
    Computed,
    Context,
    Slot,
    Source,
    changed,
    default_context,
    values,
    wait_until,
)


def later(fn: object, *args: object) -> None:
    asyncio.get_running_loop().call_soon(fn, *args)  # type: ignore[arg-type]


# -- changed -------------------------------------------------------------------------------


async def test_changed_returns_the_next_value(ctx: Context) -> None:
    s = Source(1, context=ctx)
    later(s.set, 2)
    assert await changed(s, timeout=2) == 2
    assert not s._observers


async def test_changed_ignores_equal_writes_and_equal_recomputes(ctx: Context) -> None:
    s = Source(2, context=ctx)
    parity = Computed(lambda: s.get() % 2, context=ctx)
    waiter = asyncio.ensure_future(changed(parity, timeout=2))
    await asyncio.sleep(0)
    s.set(2)
    s.set(4)  # parity stays 0
    await asyncio.sleep(0)
    assert not waiter.done()
    s.set(5)
    assert await waiter == 1
    assert not s._observers and not parity.linked


async def test_changed_on_a_slot_is_structural(ctx: Context) -> None:
    slot = Slot(lambda: "same", context=ctx)
    later(slot.invalidate)
    assert await changed(slot, timeout=2) == "same"
    assert not slot._observers


async def test_changed_timeout_leaves_no_edge(ctx: Context) -> None:
    s = Source(0, context=ctx)
    with pytest.raises(TimeoutError):
        await changed(s, timeout=0.01)
    assert not s._observers


async def test_cancelled_changed_leaves_no_edge(ctx: Context) -> None:
    s = Source(0, context=ctx)
    c = Computed(lambda: s.get() + 1, context=ctx)
    task = asyncio.ensure_future(changed(c))
    await asyncio.sleep(0)
    assert c.linked and s._observers
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not s._observers and not c.linked
    s.set(1)  # nothing left to wake
    assert c.get() == 2


# -- wait_until ----------------------------------------------------------------------------


async def test_wait_until_already_true_returns_at_once(ctx: Context) -> None:
    s = Source(3, context=ctx)
    assert await wait_until(lambda: s.get() > 2 and s.get(), context=ctx) == 3
    assert not s._observers


async def test_wait_until_becomes_true_after_several_writes(ctx: Context) -> None:
    a = Source(0, context=ctx)
    b = Source(0, context=ctx)
    checks: list[tuple[int, int]] = []

    def predicate() -> tuple[int, int] | None:
        pair = (a.get(), b.get())
        checks.append(pair)
        return pair if sum(pair) >= 3 else None

    async def writer() -> None:
        for i in range(1, 4):
            await asyncio.sleep(0)
            with ctx.batch():
                a.set(i)
                b.set(i - 1)

    task = asyncio.ensure_future(writer())
    assert await wait_until(predicate, context=ctx, timeout=2) == (2, 1)
    await task
    assert checks == [(0, 0), (1, 0), (2, 1)], "one check per batch, none after success"
    assert not a._observers and not b._observers


async def test_wait_until_predicate_error_propagates(ctx: Context) -> None:
    s = Source(1, context=ctx)

    def predicate() -> bool:
        if s.get() == 2:
            raise ArithmeticError("bad state")
        return False

    later(s.set, 2)
    with pytest.raises(ArithmeticError, match="bad state"):
        await wait_until(predicate, context=ctx, timeout=2)
    assert not s._observers


async def test_wait_until_timeout_and_cancel_leave_no_edge(ctx: Context) -> None:
    s = Source(0, context=ctx)
    with pytest.raises(TimeoutError):
        await wait_until(lambda: s.get() > 0, context=ctx, timeout=0.01)
    assert not s._observers

    task = asyncio.ensure_future(wait_until(lambda: s.get() > 0, context=ctx))
    await asyncio.sleep(0)
    assert s._observers
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not s._observers, "the source has no observers after a cancelled wait"


async def test_wait_until_on_the_default_context() -> None:
    s = Source(0)
    assert s.ctx is default_context()
    later(s.set, 7)
    assert await wait_until(lambda: s.get(), timeout=2) == 7
    assert not s._observers


async def test_many_waiters_all_wake_and_leave_nothing(ctx: Context) -> None:
    s = Source(0, context=ctx)

    def at_least(k: int) -> Callable[[], bool]:
        return lambda: s.get() >= k

    waiters = [asyncio.ensure_future(wait_until(at_least(k), context=ctx)) for k in range(1, 6)]
    await asyncio.sleep(0)
    assert len(s._observers) == 5
    for v in range(1, 6):
        s.set(v)
        await asyncio.sleep(0)
    assert await asyncio.wait_for(asyncio.gather(*waiters), 2) == [True] * 5
    assert not s._observers


# -- values --------------------------------------------------------------------------------


async def test_values_yields_current_then_latest_conflated(ctx: Context) -> None:
    s = Source(0, context=ctx)
    it = values(s)
    got = [await asyncio.wait_for(it.__anext__(), 2)]
    s.set(1)
    s.set(2)
    s.set(3)  # conflated: only the latest is yielded
    got.append(await asyncio.wait_for(it.__anext__(), 2))
    later(s.set, 4)
    got.append(await asyncio.wait_for(it.__anext__(), 2))
    assert got == [0, 3, 4]
    assert s._observers
    await it.aclose()
    assert not s._observers


async def test_values_over_a_computed_skips_equal_recomputes(ctx: Context) -> None:
    s = Source(0, context=ctx)
    half = Computed(lambda: s.get() // 2, context=ctx)
    got: list[int] = []

    async def consume() -> None:
        async for v in values(half):
            got.append(v)
            if v == 2:
                return

    task = asyncio.ensure_future(consume())
    for v in range(1, 6):
        await asyncio.sleep(0)
        s.set(v)
    await asyncio.wait_for(task, 2)
    assert got[0] == 0 and got[-1] == 2
    assert got == sorted(set(got)), "no value is yielded twice: equal recomputes are skipped"


async def test_cancelled_values_consumer_disposes_its_effect(ctx: Context) -> None:
    s = Source(0, context=ctx)
    got: list[int] = []

    async def consume() -> None:
        async for v in values(s):
            got.append(v)

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    s.set(1)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert got == [0, 1] and s._observers
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not s._observers
    s.set(2)
    assert got == [0, 1]


async def test_values_closed_by_aclosing_after_break(ctx: Context) -> None:
    s = Source(10, context=ctx)
    async with contextlib.aclosing(values(s)) as stream:
        async for v in stream:
            assert v == 10
            break
    assert not s._observers
