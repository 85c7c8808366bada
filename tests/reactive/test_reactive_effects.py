"""Effects: cleanup order, dispose, scheduling and error propagation (spec §1.1, §1.3)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lazily_queue.reactive import Computed, Context, Effect, Source, effect


def test_effect_runs_immediately_and_on_change(ctx: Context) -> None:
    s = Source(1, context=ctx)
    seen: list[int] = []
    eff = effect(lambda: seen.append(s.get()), context=ctx, name="watch")
    assert isinstance(eff, Effect) and eff.runs == 1 and seen == [1]
    s.set(1)
    assert eff.runs == 1, "an equal set schedules nothing"
    s.set(2)
    assert seen == [1, 2] and eff.runs == 2
    assert repr(eff) == "Effect(watch, runs=2)"


def test_cleanup_runs_before_each_rerun_and_on_dispose(ctx: Context) -> None:
    s = Source(0, context=ctx)
    log: list[str] = []

    def body() -> Callable[[], None]:
        v = s.get()
        log.append(f"run{v}")
        return lambda: log.append(f"cleanup{v}")

    eff = Effect(body, context=ctx)
    s.set(1)
    s.set(2)
    assert log == ["run0", "cleanup0", "run1", "cleanup1", "run2"]
    eff.dispose()
    assert log[-1] == "cleanup2"
    assert eff.disposed
    eff.dispose()
    eff.dispose()
    assert log.count("cleanup2") == 1, "dispose is idempotent"
    s.set(3)
    assert log[-1] == "cleanup2" and eff.runs == 3, "a disposed effect never reruns"
    assert not s._observers and eff._sources == {}


def test_cleanup_sees_the_graph_before_the_rerun(ctx: Context) -> None:
    s = Source("a", context=ctx)
    during_cleanup: list[str] = []

    def body() -> Callable[[], None]:
        s.get()
        return lambda: during_cleanup.append(s.peek())

    Effect(body, context=ctx)
    s.set("b")
    assert during_cleanup == ["b"], "the write has happened; the cleanup runs before the rerun"


def test_disposing_a_scheduled_effect_skips_its_pending_rerun(ctx: Context) -> None:
    s = Source(0, context=ctx)
    log: list[str] = []
    victim = Effect(lambda: log.append(f"victim{s.get()}"), context=ctx)
    with ctx.batch():
        s.set(1)
        assert ctx._pending == [victim]
        victim.dispose()
    assert log == ["victim0"]
    assert not s._observers


def test_effect_disposed_by_another_effect_during_a_flush(ctx: Context) -> None:
    s = Source(0, context=ctx)
    log: list[str] = []
    effects: dict[str, Effect] = {}

    def make(me: str, other: str) -> Callable[[], None]:
        def body() -> None:
            log.append(f"{me}{s.get()}")
            if s.peek() == 1:
                effects[other].dispose()

        return body

    effects["a"] = Effect(make("a", "b"), context=ctx)
    effects["b"] = Effect(make("b", "a"), context=ctx)
    log.clear()
    s.set(1)
    # Whichever runs first disposes the other before its (pending) rerun.
    assert len(log) == 1
    assert sum(e.disposed for e in effects.values()) == 1
    assert len(s._observers) == 1


def test_effect_disposing_itself_during_its_run_leaves_no_edge(ctx: Context) -> None:
    s = Source(0, context=ctx)
    other = Source(0, context=ctx)
    cleanups: list[int] = []
    holder: list[Effect] = []

    def once() -> Callable[[], None]:
        v = s.get()
        other.get()
        if v == 1:
            holder[0].dispose()
        return lambda: cleanups.append(v)

    eff = Effect(once, context=ctx)
    holder.append(eff)
    s.set(1)
    assert eff.disposed
    assert not s._observers and not other._observers and eff._sources == {}
    assert cleanups == [0, 1], "the cleanup of the run that disposed it still runs"
    s.set(2)
    other.set(2)
    assert eff.runs == 2


def test_effect_exceptions_every_effect_still_runs_first_error_reraised(
    ctx: Context,
) -> None:
    s = Source(0, context=ctx)
    ran: list[str] = []

    def failing() -> None:
        if s.get():
            ran.append("failing")
            raise ValueError("first")

    def healthy() -> None:
        ran.append(f"healthy{s.get()}")

    Effect(failing, context=ctx)
    Effect(healthy, context=ctx)
    ran.clear()
    with pytest.raises(ValueError, match="first"):
        s.set(1)
    assert sorted(ran) == ["failing", "healthy1"]
    assert ctx._errors == [] and not ctx.in_batch
    with pytest.raises(ValueError):
        s.set(2)  # the failing effect is still subscribed and fails again
    s.set(0)
    assert ran[-1] == "healthy0"


def test_several_effect_errors_raise_an_exception_group(ctx: Context) -> None:
    s = Source(0, context=ctx)
    ran: list[str] = []

    def make(name: str, exc: type[Exception]) -> Callable[[], None]:
        def body() -> None:
            if s.get():
                ran.append(name)
                raise exc(name)

        return body

    Effect(make("a", KeyError), context=ctx)
    Effect(lambda: ran.append(f"ok{s.get()}"), context=ctx)
    Effect(make("b", ValueError), context=ctx)
    ran.clear()
    with pytest.raises(ExceptionGroup) as info:
        s.set(1)
    group = info.value
    assert "2 effects failed" in str(group)
    assert sorted(type(e).__name__ for e in group.exceptions) == ["KeyError", "ValueError"]
    assert sorted(ran) == ["a", "b", "ok1"]
    assert ctx._errors == []


def test_effect_errors_raise_at_the_outermost_batch_exit(ctx: Context) -> None:
    s = Source(0, context=ctx)

    def failing() -> None:
        if s.get():
            raise RuntimeError("late")

    Effect(failing, context=ctx)
    with pytest.raises(RuntimeError, match="late"):
        with ctx.batch():
            s.set(1)
            s.set(2)  # nothing raised inside the batch
    assert not ctx.in_batch


def test_effect_returning_a_non_callable_raises_type_error(ctx: Context) -> None:
    s = Source(0, context=ctx)
    with pytest.raises(TypeError, match="cleanup callable, not int"):
        Effect(lambda: s.get() + 1, context=ctx)  # type: ignore[arg-type, return-value]
    assert not s._observers, "the failed effect was disposed"

    def sometimes() -> object:
        return 42 if s.get() else None

    eff = Effect(sometimes, context=ctx)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        s.set(1)
    assert eff._cleanup is None
    s.set(0)
    assert eff.runs == 3


def test_effect_whose_first_run_raises_is_disposed(ctx: Context) -> None:
    s = Source(0, context=ctx)
    c = Computed(lambda: s.get() * 2, context=ctx)
    runs: list[int] = []

    def bad() -> None:
        runs.append(c.get())
        raise RuntimeError("construct")

    with pytest.raises(RuntimeError, match="construct"):
        Effect(bad, context=ctx)
    assert not s._observers and not c.linked
    s.set(1)
    assert runs == [0], "nothing left to rerun"


def test_cleanup_error_is_reported_and_effect_recovers(ctx: Context) -> None:
    s = Source(0, context=ctx)
    log: list[str] = []

    def body() -> Callable[[], None]:
        v = s.get()
        log.append(f"run{v}")

        def cleanup() -> None:
            if v == 0:
                raise LookupError("cleanup failed")

        return cleanup

    eff = Effect(body, context=ctx)
    with pytest.raises(LookupError):
        s.set(1)
    s.set(2)
    assert log[-1] == "run2" and eff.runs >= 2


def test_effects_never_run_in_the_middle_of_an_invalidation_walk(ctx: Context) -> None:
    # Every node of the cone is marked before any effect runs: an effect observing
    # one branch and reading another sees the write everywhere.
    s = Source(0, context=ctx)
    def offset(i: int) -> Computed[int]:
        return Computed(lambda: s.get() + i, context=ctx)

    branches = [offset(i) for i in range(6)]
    snapshots: list[list[int]] = []

    def snapshot_after(branch: Computed[int]) -> Callable[[], None]:
        def body() -> None:
            branch.get()
            snapshots.append([x.get() for x in branches])

        return body

    for b in branches:
        Effect(snapshot_after(b), context=ctx)
    snapshots.clear()
    s.set(10)
    assert len(snapshots) == 6
    assert all(snap == [10 + i for i in range(6)] for snap in snapshots)


def test_effect_created_inside_an_effect_and_nested_writes(ctx: Context) -> None:
    s = Source(0, context=ctx)
    t = Source(0, context=ctx)
    inner_seen: list[int] = []
    inners: list[Effect] = []

    def outer() -> Callable[[], None]:
        if s.get() % 2:
            inner = Effect(lambda: inner_seen.append(t.get()), context=ctx)
            inners.append(inner)
            return inner.dispose
        return lambda: None

    Effect(outer, context=ctx)
    s.set(1)
    assert len(inners) == 1 and inner_seen == [0]
    t.set(5)
    assert inner_seen == [0, 5]
    s.set(2)  # outer reruns: its cleanup disposes the inner effect
    assert inners[0].disposed
    t.set(6)
    assert inner_seen == [0, 5]
    assert set(t._observers) == set()


def test_first_run_writes_flush_after_the_run_not_during_it(ctx: Context) -> None:
    s = Source(0, context=ctx)
    log: list[str] = []
    Effect(lambda: log.append(f"watcher{s.get()}"), context=ctx)

    def writer() -> None:
        log.append("writer-start")
        s.set(1)
        log.append("writer-end")

    Effect(writer, context=ctx)
    assert log == ["watcher0", "writer-start", "writer-end", "watcher1"]


def test_base_exception_in_an_effect_does_not_silence_the_others(ctx: Context) -> None:
    s = Source(0, context=ctx)
    log: list[tuple[str, int]] = []

    def interrupting() -> None:
        if s.get() == 1:
            raise KeyboardInterrupt

    effects = [
        Effect(lambda: log.append(("a", s.get())), context=ctx),
        Effect(interrupting, context=ctx),
        Effect(lambda: log.append(("c", s.get())), context=ctx),
    ]
    log.clear()
    with pytest.raises(KeyboardInterrupt):
        s.set(1)
    assert not ctx.in_batch and ctx._errors == []
    # Whatever the flush did not reach runs at the next flush; nothing is lost for good.
    s.set(2)
    assert ("a", 2) in log and ("c", 2) in log
    assert ctx._pending == []
    assert all(not e._scheduled for e in effects)
