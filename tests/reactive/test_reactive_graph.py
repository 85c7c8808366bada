"""Sources and computeds: laziness, glitch-freedom, the equality guard, dynamic edges, GC.

Spec §1.1-§1.3: push-mark / pull-recompute, an equal recompute does not invalidate
dependents, the edge set is rebuilt on every recompute, and an unobserved computed is
linked to nothing.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue.reactive import Computed, Context, Effect, ReactiveCycleError, Source, computed


def reading(*nodes: Any) -> Callable[[], None]:
    """An effect body that only reads ``nodes``."""

    def body() -> None:
        for node in nodes:
            node.get()

    return body


def counting(fn: Callable[[], Any]) -> tuple[Callable[[], Any], list[int]]:
    calls = [0]

    def wrapped() -> Any:
        calls[0] += 1
        return fn()

    return wrapped, calls


# -- Source -------------------------------------------------------------------------------


def test_source_get_peek_call_and_guarded_set(ctx: Context) -> None:
    s = Source(1, context=ctx, name="s")
    assert s.get() == s.peek() == s() == 1
    v0 = s.version
    s.set(1)
    assert s.version == v0, "an equal set is not a change"
    s.set(2)
    assert s.get() == 2 and s.version == v0 + 1
    assert "s" in repr(s)


def test_source_set_with_uncomparable_values_counts_as_a_change(ctx: Context) -> None:
    class Weird:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparison")

        __hash__ = object.__hash__

    a, b = Weird(), Weird()
    s = Source(a, context=ctx)
    v0 = s.version
    s.set(a)  # identity short-circuits
    assert s.version == v0
    s.set(b)  # comparison raises: treated as unequal
    assert s.peek() is b and s.version == v0 + 1


# -- laziness -----------------------------------------------------------------------------


def test_computed_is_lazy_and_memoized(ctx: Context) -> None:
    s = Source(1, context=ctx)
    fn, calls = counting(lambda: s.get() * 10)
    c = Computed(fn, context=ctx)
    assert calls[0] == 0, "nothing computed before the first read"
    assert c.get() == 10 and c() == 10 and c.peek() == 10
    assert calls[0] == 1, "reads are memoized"
    for v in range(2, 6):
        s.set(v)
    assert calls[0] == 1, "writes only mark: no recompute without a read"
    assert c.get() == 50
    assert calls[0] == 2, "one recompute for many writes"


def test_observed_chain_marks_without_recomputing_unread_nodes(ctx: Context) -> None:
    s = Source(1, context=ctx)
    fa, calls_a = counting(lambda: s.get() + 1)
    a = Computed(fa, context=ctx)
    fb, calls_b = counting(lambda: a.get() * 2)
    b = Computed(fb, context=ctx)
    seen: list[int] = []
    eff = Effect(lambda: seen.append(a.get()), context=ctx)
    assert b.get() == 4  # b read once (unobserved)
    assert (calls_a[0], calls_b[0]) == (1, 1)
    s.set(5)
    assert seen == [2, 6]
    assert calls_a[0] == 2
    assert calls_b[0] == 1, "b is not observed: the write does not recompute it"
    assert b.get() == 12 and calls_b[0] == 2
    eff.dispose()


def test_store_without_cascade_needs_no_flush(ctx: Context) -> None:
    s = Source(0, context=ctx)
    c = Computed(lambda: s.get() + 1, context=ctx)
    assert c.get() == 1
    s.set(1)
    assert ctx._pending == [] and not ctx.in_batch
    assert c.get() == 2


# -- glitch freedom -----------------------------------------------------------------------


def test_diamond_effect_sees_consistent_values_once_per_write(ctx: Context) -> None:
    s = Source(1, context=ctx)
    left = Computed(lambda: s.get() + 1, context=ctx, name="left")
    right = Computed(lambda: s.get() * 2, context=ctx, name="right")
    seen: list[tuple[int, int, int]] = []
    eff = Effect(lambda: seen.append((s.get(), left.get(), right.get())), context=ctx)
    for v in (2, 3, 10):
        s.set(v)
    assert seen == [(1, 2, 2), (2, 3, 4), (3, 4, 6), (10, 11, 20)]
    assert all(lft == v + 1 and rgt == 2 * v for v, lft, rgt in seen), "never a torn pair"
    assert eff.runs == 4


def test_deep_diamond_recomputes_each_node_once_per_write(ctx: Context) -> None:
    s = Source(1, context=ctx)
    fa, ca = counting(lambda: s.get() + 1)
    fb, cb = counting(lambda: s.get() + 2)
    a, b = Computed(fa, context=ctx), Computed(fb, context=ctx)
    fj, cj = counting(lambda: a.get() + b.get())
    join = Computed(fj, context=ctx)
    top = Computed(lambda: join.get() * 10, context=ctx)
    seen: list[int] = []
    eff = Effect(lambda: seen.append(top.get()), context=ctx)
    s.set(2)
    s.set(3)
    assert seen == [50, 70, 90]
    assert (ca[0], cb[0], cj[0]) == (3, 3, 3)
    assert eff.runs == 3


# -- equality guard -----------------------------------------------------------------------


def test_equal_recompute_does_not_rerun_dependents(ctx: Context) -> None:
    s = Source(2, context=ctx)
    fp, parity_calls = counting(lambda: s.get() % 2)
    parity = Computed(fp, context=ctx)
    fd, downstream_calls = counting(lambda: parity.get() + 100)
    downstream = Computed(fd, context=ctx)
    seen: list[int] = []
    eff = Effect(lambda: seen.append(downstream.get()), context=ctx)
    v0 = parity.version
    s.set(4)  # parity recomputes to the same 0
    assert parity_calls[0] == 2
    assert parity.version == v0, "an equal recompute keeps the version"
    assert downstream_calls[0] == 1, "dependents of an unchanged computed are not recomputed"
    assert seen == [100] and eff.runs == 1
    s.set(5)
    assert seen == [100, 101] and eff.runs == 2


def test_equality_guard_for_an_unobserved_chain(ctx: Context) -> None:
    s = Source(2, context=ctx)
    parity = Computed(lambda: s.get() % 2, context=ctx)
    fd, calls = counting(lambda: parity.get() + 1)
    d = Computed(fd, context=ctx)
    assert d.get() == 1
    s.set(4)
    assert d.get() == 1 and calls[0] == 1, "validated by versions, not recomputed"


# -- dynamic dependencies ------------------------------------------------------------------


def test_branch_not_read_drops_out_both_ways(ctx: Context) -> None:
    flag = Source(True, context=ctx, name="flag")
    a = Source("a", context=ctx, name="a")
    b = Source("b", context=ctx, name="b")
    fn, calls = counting(lambda: a.get() if flag.get() else b.get())
    c = Computed(fn, context=ctx, name="c")
    seen: list[str] = []
    eff = Effect(lambda: seen.append(c.get()), context=ctx)
    assert set(c._sources) == {flag, a}
    assert c in flag._observers and c in a._observers and c not in b._observers

    flag.set(False)
    assert seen == ["a", "b"]
    assert set(c._sources) == {flag, b}
    assert c not in a._observers, "the stale source must not keep the computed"
    assert c in b._observers and c in flag._observers

    before = calls[0]
    a.set("A")  # no longer a dependency
    assert calls[0] == before and seen == ["a", "b"]
    b.set("B")
    assert seen == ["a", "b", "B"]
    eff.dispose()
    assert not flag._observers and not b._observers and not c._observers
    assert not c.linked


def test_effect_dynamic_dependencies(ctx: Context) -> None:
    flag = Source(True, context=ctx)
    a = Source(1, context=ctx)
    b = Source(2, context=ctx)
    seen: list[int] = []
    eff = Effect(lambda: seen.append(a.get() if flag.get() else b.get()), context=ctx)
    assert set(eff._sources) == {flag, a}
    flag.set(False)
    assert set(eff._sources) == {flag, b}
    assert eff not in a._observers and eff in b._observers
    a.set(100)
    assert eff.runs == 2
    b.set(3)
    assert seen == [1, 2, 3]


def test_unobserved_computed_links_nothing_and_validates_by_versions(ctx: Context) -> None:
    s = Source(1, context=ctx)
    inner = Computed(lambda: s.get() + 1, context=ctx)
    outer = Computed(lambda: inner.get() * 2, context=ctx)
    assert outer.get() == 4
    assert not s._observers and not inner._observers and not outer._observers
    assert not outer.linked and not inner.linked
    s.set(2)
    assert outer.get() == 6
    assert not s._observers


def test_computed_becomes_linked_while_observed_and_unlinks_after(ctx: Context) -> None:
    s = Source(1, context=ctx)
    inner = Computed(lambda: s.get() + 1, context=ctx)
    outer = Computed(lambda: inner.get() * 2, context=ctx)
    assert outer.get() == 4  # computed unlinked first
    seen: list[int] = []
    eff = Effect(lambda: seen.append(outer.get()), context=ctx)
    assert outer.linked and inner.linked
    assert eff in outer._observers and outer in inner._observers and inner in s._observers
    s.set(2)
    assert seen == [4, 6]
    eff.dispose()
    assert not outer.linked and not inner.linked and not s._observers
    s.set(3)
    assert seen == [4, 6]
    assert outer.get() == 8, "correct again once unlinked"


def test_relinked_computed_is_not_stale(ctx: Context) -> None:
    s = Source(1, context=ctx)
    c = Computed(lambda: s.get() * 3, context=ctx)
    first = Effect(reading(c), context=ctx)
    first.dispose()
    s.set(2)  # c is unlinked: nobody marks it
    seen: list[int] = []
    second = Effect(lambda: seen.append(c.get()), context=ctx)
    assert seen == [6]
    s.set(3)
    assert seen == [6, 9]
    second.dispose()


def test_computed_read_then_invalidated_in_the_same_run_is_not_kept_stale(
    ctx: Context,
) -> None:
    # The effect reads c (unlinked), then writes c's source before the run ends, when
    # c gets linked. c must not be linked as CLEAN with the stale value.
    s = Source(1, context=ctx)
    c = Computed(lambda: s.get() * 10, context=ctx)
    seen: list[int] = []

    def body() -> None:
        seen.append(c.get())
        if s.peek() == 1:
            s.set(2)

    eff = Effect(body, context=ctx)
    assert c.get() == 20, "a linked computed must not return a stale value"
    assert seen == [10, 20], "the effect reruns: a value it read changed"
    s.set(3)
    assert seen == [10, 20, 30]
    eff.dispose()


def test_nested_relink_keeps_marks_flowing_to_the_new_observer(ctx: Context) -> None:
    # outer is linked by a new effect without recomputing; linking it links inner, which
    # cannot prove it is fresh and becomes CHECK. outer (and the effect) must then not
    # stay CLEAN, or the next write would stop at inner and never reach the effect.
    s = Source(0, context=ctx)
    inner = Computed(lambda: s.get(), context=ctx, name="inner")
    outer = Computed(lambda: inner.get() if inner.get() % 2 == 0 else s.get() + 1,
                     context=ctx, name="outer")
    keeper = Effect(reading(s, inner), context=ctx)
    assert outer.get() == 0
    keeper.dispose()
    inner._checked_epoch = -1  # simulate an unlink that could not prove it fresh
    seen: list[int] = []
    eff = Effect(lambda: seen.append(outer.get()), context=ctx)
    s.set(1)
    assert seen == [0, 2]
    s.set(2)
    assert seen == [0, 2], "outer recomputes to an equal 2: no rerun"
    s.set(3)
    assert seen == [0, 2, 4]
    eff.dispose()


def test_newly_read_linked_computed_marked_during_the_run(ctx: Context) -> None:
    # c is already linked by another effect; a second effect reads it (new edge), then
    # writes its source. The second effect must still be notified.
    s = Source(1, context=ctx)
    c = Computed(lambda: s.get() + 1, context=ctx)
    keep = Effect(reading(c), context=ctx)
    seen: list[int] = []

    def body() -> None:
        seen.append(c.get())
        if s.peek() == 1:
            s.set(5)

    eff = Effect(body, context=ctx)
    assert seen == [2, 6]
    s.set(7)
    assert seen == [2, 6, 8]
    eff.dispose()
    keep.dispose()


# -- cycles and errors ---------------------------------------------------------------------


def test_computed_reading_itself_raises_cycle_error(ctx: Context) -> None:
    holder: list[Computed[int]] = []
    c = Computed(lambda: holder[0].get() + 1, context=ctx, name="selfish")
    holder.append(c)
    with pytest.raises(ReactiveCycleError, match=r"selfish.*reads itself"):
        c.get()
    assert not c._computing
    with pytest.raises(ReactiveCycleError):
        c.get()  # raises again, does not hang or cache garbage


def test_mutual_computed_cycle_raises_and_context_stays_usable(ctx: Context) -> None:
    box: dict[str, Computed[int]] = {}
    box["a"] = Computed(lambda: box["b"].get() + 1, context=ctx, name="a")
    box["b"] = Computed(lambda: box["a"].get() + 1, context=ctx, name="b")
    with pytest.raises(ReactiveCycleError):
        box["a"].get()
    assert ctx._observer is None
    s = Source(1, context=ctx)
    ok = Computed(lambda: s.get() + 1, context=ctx)
    seen: list[int] = []
    Effect(lambda: seen.append(ok.get()), context=ctx)
    s.set(2)
    assert seen == [2, 3]


def test_computed_error_is_not_cached(ctx: Context) -> None:
    s = Source(0, context=ctx)
    c = Computed(lambda: 10 // s.get(), context=ctx)
    with pytest.raises(ZeroDivisionError):
        c.get()
    assert ctx._observer is None
    s.set(2)
    assert c.get() == 5
    s.set(0)
    with pytest.raises(ZeroDivisionError):
        c.get()
    s.set(5)
    assert c.get() == 2


def test_computed_that_had_a_value_does_not_serve_it_after_an_error(ctx: Context) -> None:
    s = Source(1, context=ctx)
    c = Computed(lambda: 10 // s.get(), context=ctx)
    assert c.get() == 10
    s.set(0)
    for _ in range(3):
        with pytest.raises(ZeroDivisionError):
            c.get()  # every read raises; the old 10 is never returned as current
    with pytest.raises(ZeroDivisionError):
        c.peek()
    s.set(1)
    assert c.get() == 10


def test_failing_observed_computed_still_propagates_later_writes(ctx: Context) -> None:
    s = Source(1, context=ctx)
    c = Computed(lambda: 10 // s.get(), context=ctx)
    seen: list[int] = []
    eff = Effect(lambda: seen.append(c.get()), context=ctx)
    with pytest.raises(ZeroDivisionError):
        s.set(0)
    s.set(2)  # must reach the effect through the computed that failed
    assert seen == [10, 5]
    with pytest.raises(ZeroDivisionError):
        s.set(0)
    s.set(1)
    assert seen == [10, 5, 10], "recovering to the value seen before the error reruns"
    eff.dispose()


def test_a_failed_read_is_still_a_dependency(ctx: Context) -> None:
    s = Source(1, context=ctx)
    t = Source(0, context=ctx)
    c = Computed(lambda: 10 // s.get(), context=ctx)
    seen: list[tuple[int, int | str]] = []

    def body() -> None:
        tv = t.get()
        try:
            seen.append((tv, c.get()))
        except ZeroDivisionError:
            seen.append((tv, "error"))

    eff = Effect(body, context=ctx)
    with ctx.batch():
        t.set(1)
        s.set(0)
    assert seen == [(0, 10), (1, "error")]
    assert c in eff._sources and eff in c._observers
    s.set(5)  # fixes c: the effect that caught the error must rerun
    assert seen == [(0, 10), (1, "error"), (1, 2)]
    eff.dispose()


def test_effect_handling_a_dependency_error_reruns_instead_of_raising(ctx: Context) -> None:
    s = Source(1, context=ctx)
    c = Computed(lambda: 10 // s.get(), context=ctx)
    downstream = Computed(lambda: c.get() + 1, context=ctx)
    seen: list[int | str] = []

    def boundary() -> None:
        try:
            seen.append(downstream.get())
        except ZeroDivisionError:
            seen.append("error")

    eff = Effect(boundary, context=ctx)
    s.set(0)  # the error reaches the effect's own read, which handles it: no raise here
    assert seen == [11, "error"]
    s.set(5)
    assert seen == [11, "error", 3]
    eff.dispose()


def test_unhandled_dependency_error_is_raised_after_the_flush(ctx: Context) -> None:
    s = Source(1, context=ctx)
    c = Computed(lambda: 10 // s.get(), context=ctx)
    seen: list[int] = []
    other: list[int] = []
    Effect(lambda: seen.append(c.get()), context=ctx)
    Effect(lambda: other.append(s.get()), context=ctx)
    with pytest.raises(ZeroDivisionError):
        s.set(0)
    assert other == [1, 0], "the other effect still ran"
    s.set(2)
    assert seen == [10, 5]


def test_computed_shorthand_and_repr(ctx: Context) -> None:
    s = Source(3, context=ctx)
    c = computed(lambda: s.get() + 1, context=ctx, name="inc")
    assert isinstance(c, Computed) and c.get() == 4
    assert repr(c) == "Computed(inc)"


# -- garbage -------------------------------------------------------------------------------


def test_dropped_unobserved_computed_is_collectable(ctx: Context) -> None:
    s = Source(1, context=ctx)

    class Payload:
        pass

    def make() -> tuple[weakref.ref[Any], weakref.ref[Any]]:
        payload = Payload()

        def body() -> int:
            assert payload is not None
            return s.get() + 1

        c = Computed(body, context=ctx)
        assert c.get() == 2
        s.set(2)
        assert c.get() == 3
        # Computed has __slots__ and no __weakref__: watch what only it keeps alive.
        return weakref.ref(body), weakref.ref(payload)

    body_ref, payload_ref = make()
    assert body_ref() is None and payload_ref() is None, "freed by refcount alone"
    assert not s._observers


def test_computed_is_collectable_after_its_observer_is_disposed(ctx: Context) -> None:
    s = Source(1, context=ctx)

    def make() -> tuple[Effect, weakref.ref[Any]]:
        def body() -> int:
            return s.get() * 2

        c = Computed(body, context=ctx)
        eff = Effect(reading(c), context=ctx)
        return eff, weakref.ref(body)

    eff, body_ref = make()
    assert body_ref() is not None, "linked while observed"
    eff.dispose()
    del eff
    gc.collect()
    assert body_ref() is None
    assert not s._observers
