"""Slots and slot groups: memoized readers with no graph dependencies (spec §1.5).

Invalidation is structural (dependents rerun even for an equal value); an unobserved
group only ORs a stale mask (O(1)) and its slots' versions catch up on the next read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lazily_queue import QueueCell
from lazily_queue.reactive import Computed, Context, Effect, Slot, SlotGroup, Source


class Store:
    """External state the slot bodies read untracked, with call counters."""

    def __init__(self, **values: Any) -> None:
        self.values = dict(values)
        self.calls: dict[str, int] = dict.fromkeys(values, 0)

    def reader(self, key: str) -> Callable[[], Any]:
        def read() -> Any:
            self.calls[key] += 1
            return self.values[key]

        return read


def watch(nodes: dict[str, Any], ctx: Context) -> tuple[Effect, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    eff = Effect(lambda: seen.append({k: n.get() for k, n in nodes.items()}), context=ctx)
    return eff, seen


def reading(*nodes: Any) -> Callable[[], None]:
    def body() -> None:
        for node in nodes:
            node.get()

    return body


# -- Slot ----------------------------------------------------------------------------------


def test_slot_is_memoized_and_lazy(ctx: Context) -> None:
    store = Store(x=1)
    slot = Slot(store.reader("x"), context=ctx, name="x")
    assert store.calls["x"] == 0 and slot.is_stale
    assert slot.get() == 1 and slot() == 1
    assert store.calls["x"] == 1 and not slot.is_stale
    store.values["x"] = 2
    assert slot.get() == 1, "no graph dependency: stale until invalidated"
    slot.invalidate()
    assert store.calls["x"] == 1, "invalidate only marks"
    assert slot.get() == 2 and store.calls["x"] == 2
    assert repr(slot) == "Slot(x)"


def test_slot_invalidation_is_structural(ctx: Context) -> None:
    store = Store(x=1)
    slot = Slot(store.reader("x"), context=ctx)
    eff, seen = watch({"x": slot}, ctx)
    v0 = slot.version
    slot.invalidate()  # value unchanged
    assert slot.version == v0 + 1
    assert eff.runs == 2 and seen == [{"x": 1}, {"x": 1}], "dependents rerun on equal value"


def test_computed_over_a_slot_is_equality_guarded(ctx: Context) -> None:
    store = Store(x=1)
    slot = Slot(store.reader("x"), context=ctx)
    positive = Computed(lambda: slot.get() > 0, context=ctx)
    eff, seen = watch({"p": positive}, ctx)
    slot.invalidate()
    store.values["x"] = 5
    slot.invalidate()
    assert eff.runs == 1, "the computed absorbs structural invalidations of equal value"
    store.values["x"] = -1
    slot.invalidate()
    assert seen == [{"p": True}, {"p": False}]


def test_slot_body_reads_are_untracked(ctx: Context) -> None:
    hidden = Source(1, context=ctx)
    slot = Slot(lambda: hidden.get() * 2, context=ctx)
    eff, seen = watch({"s": slot}, ctx)
    assert set(eff._sources) == {slot} and not hidden._observers
    hidden.set(2)
    assert eff.runs == 1, "a slot has no graph dependencies"
    slot.invalidate()
    assert seen[-1] == {"s": 4}


# -- SlotGroup -----------------------------------------------------------------------------


def make_group(ctx: Context, n: int = 4) -> tuple[SlotGroup, list[Slot[Any]], Store]:
    store = Store(**{f"k{i}": i for i in range(n)})
    group = SlotGroup(ctx)
    slots = [group.slot(store.reader(f"k{i}"), name=f"k{i}") for i in range(n)]
    return group, slots, store


def test_unobserved_group_invalidate_only_marks_the_mask(ctx: Context) -> None:
    group, slots, store = make_group(ctx)
    assert [s.get() for s in slots] == [0, 1, 2, 3]
    versions = [s._version for s in slots]
    epoch = ctx._write_epoch
    store.values.update(k1=10, k3=30)
    group.invalidate(0b1010)
    # O(1): only the shared mask and the write epoch moved; no slot was touched.
    assert group._stale == 0b1010 and not group.observed
    assert [s._version for s in slots] == versions
    assert all(s._valid for s in slots)
    assert ctx._write_epoch == epoch + 1
    group.invalidate(0b0010)
    assert group._stale == 0b1010
    assert ctx._write_epoch == epoch + 1, "bits already stale need no new epoch"
    # Versions catch up on the next read (of any slot named in the mask).
    assert slots[1].get() == 10
    assert group._stale == 0
    assert [s._version for s in slots] == [versions[0], versions[1] + 1, versions[2],
                                           versions[3] + 1]
    assert slots[3].get() == 30 and slots[0].get() == 0 and slots[2].get() == 2
    assert [store.calls[f"k{i}"] for i in range(4)] == [1, 2, 1, 2]


def test_slot_version_and_is_stale_sync_the_group(ctx: Context) -> None:
    group, slots, _ = make_group(ctx, 2)
    slots[0].get()
    slots[1].get()
    v = slots[0]._version
    group.invalidate(0b01)
    assert slots[0].version == v + 1
    assert slots[0].is_stale and not slots[1].is_stale


def test_unlinked_computed_reading_a_slot_sees_a_cold_invalidation(ctx: Context) -> None:
    group, slots, store = make_group(ctx, 2)
    c = Computed(lambda: slots[0].get() + 100, context=ctx)
    assert c.get() == 100 and not c.linked
    store.values["k0"] = 7
    group.invalidate(0b01)
    assert group._stale == 0b01
    assert c.get() == 107, "version catch-up reaches the unlinked computed"
    group.invalidate(0b10)  # another slot: c is validated without recomputing
    assert c.get() == 107


def test_unlinked_computeds_see_every_write_of_a_bit_already_stale(ctx: Context) -> None:
    group, slots, store = make_group(ctx, 2)
    c = Computed(lambda: slots[0].get() + 100, context=ctx)
    d = Computed(lambda: slots[1].get(), context=ctx)
    assert (c.get(), d.get()) == (100, 1)
    for n in range(1, 6):
        store.values["k0"] = n
        group.invalidate(0b01)
        assert d.get() == store.values["k1"]  # validated at the new epoch, k0 stale
        store.values["k0"] = 10 * n
        group.invalidate(0b01)  # already stale: the epoch stays
        if n % 2:
            assert c.get() == 10 * n + 100
        store.values["k1"] = n
        group.invalidate(0b10)
        assert (c.get(), d.get()) == (10 * n + 100, n)


def test_observing_one_slot_then_invalidating_others(ctx: Context) -> None:
    group, slots, store = make_group(ctx)
    for s in slots:
        s.get()
    store.values["k2"] = 20
    group.invalidate(0b0100)  # cold: pending in the mask
    eff, seen = watch({"k0": slots[0]}, ctx)
    assert group.observed and group._hot == 1
    assert group._stale == 0, "becoming observed syncs the pending mask"
    assert slots[2].is_stale
    v1, v3 = slots[1]._version, slots[3]._version
    store.values.update(k1=11, k3=33)
    group.invalidate(0b1010)  # hot, but not the observed slot
    assert eff.runs == 1, "only the observed slot's dependents rerun"
    assert (slots[1]._version, slots[3]._version) == (v1 + 1, v3 + 1)
    assert slots[1].get() == 11 and slots[3].get() == 33 and slots[2].get() == 20
    group.invalidate(0b0001)
    assert eff.runs == 2 and seen[-1] == {"k0": 0}
    eff.dispose()


def test_hot_group_invalidates_the_mask_as_one_atomic_transition(ctx: Context) -> None:
    group, slots, store = make_group(ctx, 2)
    eff, seen = watch({"k0": slots[0], "k1": slots[1]}, ctx)
    store.values.update(k0=100, k1=101)
    group.invalidate(0b11)
    assert eff.runs == 2, "one run for both slots"
    assert seen[-1] == {"k0": 100, "k1": 101}, "no torn observation"
    eff.dispose()


def test_group_hot_count_follows_observers(ctx: Context) -> None:
    group, slots, _ = make_group(ctx, 3)
    assert group._hot == 0 and not group.observed
    e1 = Effect(reading(slots[0]), context=ctx)
    e2 = Effect(reading(slots[0]), context=ctx)
    assert group._hot == 1, "counted per observed slot, not per observer"
    e3 = Effect(reading(slots[1], slots[2]), context=ctx)
    assert group._hot == 3
    e1.dispose()
    assert group._hot == 3
    e2.dispose()
    assert group._hot == 2
    e1.dispose()
    assert group._hot == 2, "a second dispose changes nothing"
    e3.dispose()
    assert group._hot == 0 and not group.observed


def test_group_hot_count_with_dynamic_reads_and_computeds(ctx: Context) -> None:
    group, slots, _ = make_group(ctx, 2)
    flag = Source(True, context=ctx)
    via = Computed(lambda: slots[1].get(), context=ctx)
    eff = Effect(lambda: reading(slots[0] if flag.get() else via)(), context=ctx)
    assert group._hot == 1 and slots[0]._observers and not slots[1]._observers
    flag.set(False)
    assert group._hot == 1 and not slots[0]._observers and via in slots[1]._observers
    flag.set(True)
    assert group._hot == 1 and not via.linked and not slots[1]._observers
    eff.dispose()
    assert group._hot == 0
    # Cold again: invalidations go back to the mask.
    group.invalidate(0b11)
    assert group._stale == 0b11


def test_cold_then_hot_then_cold_keeps_versions_consistent(ctx: Context) -> None:
    group, slots, store = make_group(ctx, 1)
    slot = slots[0]
    c = Computed(lambda: slot.get() * 2, context=ctx)
    assert c.get() == 0
    for round_ in range(1, 4):
        store.values["k0"] = round_
        group.invalidate(1)  # cold
        eff, seen = watch({"c": c}, ctx)
        assert seen == [{"c": 2 * round_}]
        store.values["k0"] = round_ + 100
        group.invalidate(1)  # hot
        assert seen[-1] == {"c": 2 * (round_ + 100)}
        eff.dispose()
        assert not group.observed
    assert c.get() == 2 * 103


# -- the queue's reader kinds over the inlined fast path -------------------------------------


def test_queue_readers_flip_together_and_sync_lazily(ctx: Context) -> None:
    q: QueueCell[int] = QueueCell(capacity=2, context=ctx)
    # Unobserved: ops only OR the stale mask; reads derive consistent values lazily.
    assert q.try_push(1) is None and q.try_push(2) is None
    assert (q.len.get(), q.is_empty.get(), q.is_full.get(), q.head.get()) == (2, False, True, 1)
    assert not q._readers.observed
    seen: list[tuple[int, bool, bool]] = []
    eff = Effect(lambda: seen.append((q.len.get(), q.is_empty.get(), q.is_full.get())),
                 context=ctx)
    assert q._readers.observed
    q.try_pop()
    q.try_pop()
    q.try_push(7)
    assert seen == [(2, False, True), (1, False, False), (0, True, False), (1, False, False)]
    assert all((n == 0) == empty and (n == 2) == full for n, empty, full in seen), "never torn"
    with ctx.batch():
        q.try_push(8)
        q.try_pop()
        q.try_pop()
    assert seen[-1] == (0, True, False) and eff.runs == 5, "one run per batch"
    eff.dispose()
    assert not q._readers.observed
