"""Batching and the effect flush (spec §1.4): one flush at the outermost batch exit,
repeated until nothing is pending, bounded by ``flush_budget``.
"""

from __future__ import annotations

import re

import pytest

from lazily_queue.reactive import (
    Computed,
    Context,
    Effect,
    ReactiveCycleError,
    Source,
    batch,
    default_context,
)


def test_batch_function_runs_effects_once_and_returns_the_result(ctx: Context) -> None:
    a = Source(1, context=ctx)
    b = Source(2, context=ctx)
    seen: list[tuple[int, int]] = []
    eff = Effect(lambda: seen.append((a.get(), b.get())), context=ctx)

    def write() -> str:
        a.set(10)
        b.set(20)
        a.set(11)
        assert seen == [(1, 2)], "no effect runs inside the batch"
        assert ctx.in_batch
        return "done"

    assert ctx.batch(write) == "done"
    assert seen == [(1, 2), (11, 20)]
    assert eff.runs == 2 and not ctx.in_batch


def test_batch_context_manager_and_nesting(ctx: Context) -> None:
    a = Source(0, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(a.get()), context=ctx)
    with ctx.batch() as inner_ctx:
        assert inner_ctx is ctx
        a.set(1)
        with ctx.batch():
            a.set(2)
            ctx.batch(lambda: a.set(3))
            assert seen == [0], "inner exits do not flush"
        assert seen == [0]
        a.set(4)
    assert seen == [0, 4], "exactly one run at the outermost exit"


def test_reads_inside_a_batch_see_the_new_values(ctx: Context) -> None:
    s = Source(1, context=ctx)
    doubled = Computed(lambda: s.get() * 2, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(doubled.get()), context=ctx)
    with ctx.batch():
        s.set(5)
        assert s.get() == 5
        assert doubled.get() == 10, "an observed computed is pulled fresh inside a batch"
        s.set(6)
        assert doubled.get() == 12
    assert seen == [2, 12]


def test_batch_with_no_net_change_through_a_computed_runs_nothing(ctx: Context) -> None:
    s = Source(1, context=ctx)
    c = Computed(lambda: s.get() > 0, context=ctx)
    seen: list[bool] = []
    eff = Effect(lambda: seen.append(c.get()), context=ctx)
    with ctx.batch():
        s.set(2)
        s.set(3)
    assert eff.runs == 1 and seen == [True], "the computed recomputed to an equal value"
    assert c in s._observers


def test_module_batch_uses_the_default_or_given_context(ctx: Context) -> None:
    s = Source(0, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(s.get()), context=ctx)
    with batch(context=ctx):
        s.set(1)
        s.set(2)
        assert seen == [0]
    assert seen == [0, 2]

    def write_and_return() -> str:
        s.set(3)
        return "r"

    assert batch(write_and_return, context=ctx) == "r"
    assert seen == [0, 2, 3]

    d = Source(0)  # default context of this thread
    assert d.ctx is default_context()
    dseen: list[int] = []
    eff = Effect(lambda: dseen.append(d.get()))
    with batch():
        d.set(1)
        d.set(2)
    assert dseen == [0, 2]
    eff.dispose()


def test_batch_exception_still_flushes_and_resets_depth(ctx: Context) -> None:
    s = Source(0, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(s.get()), context=ctx)

    def boom() -> None:
        s.set(1)
        raise KeyError("x")

    with pytest.raises(KeyError):
        ctx.batch(boom)
    assert seen == [0, 1] and not ctx.in_batch
    with pytest.raises(ValueError):
        with ctx.batch():
            s.set(2)
            raise ValueError
    assert seen == [0, 1, 2] and not ctx.in_batch


def test_flush_repeats_until_nothing_is_pending(ctx: Context) -> None:
    a = Source(0, context=ctx, name="a")
    b = Source(0, context=ctx, name="b")
    c = Source(0, context=ctx, name="c")
    log: list[str] = []

    def a_to_b() -> None:
        v = a.get()
        log.append(f"ab{v}")
        b.set(v * 10)

    def b_to_c() -> None:
        v = b.get()
        log.append(f"bc{v}")
        c.set(v + 1)

    Effect(a_to_b, context=ctx)
    Effect(b_to_c, context=ctx)
    final: list[int] = []
    Effect(lambda: final.append(c.get()), context=ctx)
    log.clear()
    final.clear()
    a.set(2)
    assert (a.peek(), b.peek(), c.peek()) == (2, 20, 21)
    assert log == ["ab2", "bc20"]
    assert final == [21]
    assert ctx._pending == [] and not ctx.in_batch


def test_effect_writing_inside_a_flush_is_batched_with_the_flush(ctx: Context) -> None:
    # Two writes made by one effect reach a downstream effect once, consistently.
    trigger = Source(0, context=ctx)
    x = Source(0, context=ctx)
    y = Source(0, context=ctx)

    def writer() -> None:
        v = trigger.get()
        x.set(v)
        y.set(-v)

    Effect(writer, context=ctx)
    pairs: list[tuple[int, int]] = []
    Effect(lambda: pairs.append((x.get(), y.get())), context=ctx)
    trigger.set(3)
    assert pairs == [(0, 0), (3, -3)]


def test_effects_ping_ponging_raise_cycle_error_and_context_stays_usable() -> None:
    ctx = Context(name="pingpong", flush_budget=20)
    x = Source(0, context=ctx, name="x")
    y = Source(0, context=ctx, name="y")
    armed = Source(False, context=ctx, name="armed")

    def ping() -> None:
        v = x.get()
        if armed.get():
            y.set(v + 1)

    def pong() -> None:
        v = y.get()
        if armed.get():
            x.set(v + 1)

    e1 = Effect(ping, context=ctx, name="ping")
    e2 = Effect(pong, context=ctx, name="pong")
    with pytest.raises(ReactiveCycleError) as info:
        armed.set(True)
    message = str(info.value)
    assert "20 flush rounds" in message
    assert re.search(r"still pending: (ping|pong)", message)
    assert "depends on" in message
    assert 15 <= e1.runs + e2.runs <= 30, "bounded by the budget"

    # Usable afterwards: no open batch, nothing pending, no error left over...
    assert not ctx.in_batch and ctx._pending == [] and ctx._errors == []
    # ...and the effects that were pending when the budget ran out still react.
    armed.set(False)
    r1, r2 = e1.runs, e2.runs
    x.set(100)
    y.set(100)
    assert (e1.runs, e2.runs) == (r1 + 1, r2 + 1)
    other = Source(0, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(other.get()), context=ctx)
    other.set(1)
    assert seen == [0, 1]
    e1.dispose()
    e2.dispose()


def test_cycle_error_keeps_earlier_effect_errors_as_its_cause() -> None:
    ctx = Context(name="cause", flush_budget=5)
    t = Source(0, context=ctx)
    loop = Source(0, context=ctx)

    def failing() -> None:
        if t.get():
            raise ValueError("boom")

    def looping() -> None:
        t.get()
        v = loop.get()
        if t.peek():
            loop.set(v + 1)

    Effect(failing, context=ctx)
    Effect(looping, context=ctx)
    with pytest.raises(ReactiveCycleError) as info:
        t.set(1)
    assert isinstance(info.value.__cause__, ValueError)
    assert ctx._errors == []
    # The next unrelated flush does not re-raise the old error.
    s = Source(0, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(s.get()), context=ctx)
    s.set(1)
    assert seen == [0, 1]


def test_effect_writing_its_own_dependency_converges_or_raises() -> None:
    ctx = Context(name="self", flush_budget=50)
    s = Source(0, context=ctx)
    seen: list[int] = []

    def climb() -> None:
        v = s.get()
        seen.append(v)
        if v < 5:
            s.set(v + 1)

    eff = Effect(climb, context=ctx)
    assert seen == [0, 1, 2, 3, 4, 5], "reruns until its read is current"
    assert s.peek() == 5
    eff.dispose()

    forever = Source(0, context=ctx, name="forever")

    def unbounded() -> None:
        forever.set(forever.get() + 1)

    with pytest.raises(ReactiveCycleError):
        Effect(unbounded, context=ctx, name="runaway")
    assert not forever._observers, "the runaway effect was disposed"
    assert not ctx.in_batch


def test_flush_budget_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Context(flush_budget=0)
    assert Context(flush_budget=1).flush_budget == 1
    assert "pending=0" in repr(Context(name="r"))
