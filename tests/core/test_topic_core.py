"""TopicCore: the topic rules (spec §3, edge cases E13-E26) and its retention law."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_work_models import TopicModel

from lazily_queue import Durability, InvalidSnapshot, SubscribeOutcome, TopicCore


def core_with(elements: list[Any], base: int = 0, **subs: tuple[int, str, bool]) -> TopicCore[Any]:
    return TopicCore.from_snapshot({
        "base_offset": base,
        "elements": elements,
        "subscriptions": {k: {"cursor": c, "durability": d, "connected": on}
                          for k, (c, d, on) in subs.items()},
    })


def test_e13_late_subscriber_starts_at_end_offset() -> None:
    core = core_with(["c", "d"], base=2)
    for sub, kind in (("dur", "durable"), ("eph", "ephemeral")):
        step = core.subscribe(sub, kind)
        assert step == (SubscribeOutcome.Subscribed, frozenset({sub}))
        assert core.subscription(sub) == {"durability": kind, "connected": True, "cursor": 4}
        assert core.read_stream(sub) == []
        assert core.read(sub) is None


def test_e14_resubscribe_disconnected_durable_reuses_cursor_and_durability() -> None:
    core = core_with(["a", "b"], d=(0, "durable", False))
    step = core.subscribe("d", Durability.EPHEMERAL)
    assert step == (SubscribeOutcome.Reconnected, frozenset({"d"}))
    assert core.subscription("d") == {"durability": "durable", "connected": True, "cursor": 0}
    assert core.read_stream("d") == ["a", "b"]
    assert core.subscribe("d") == (SubscribeOutcome.AlreadyConnected, frozenset())


def test_e15_ephemeral_disconnect_removes_record_and_resubscribe_misses() -> None:
    core = core_with([], e=(0, "ephemeral", True), d=(0, "durable", True))
    core.publish("a")
    assert core.disconnect("e") == (True, frozenset({"e"}))
    assert "e" not in core.subscriptions()
    assert core.read_stream("e") is None
    assert core.publish("b").invalidated == frozenset({"d"})
    assert core.retention_frontier() == 0  # only the durable cursor counts
    core.subscribe("e", "ephemeral")
    assert core.read_stream("e") == []  # "b" was missed


def test_e16_durable_disconnect_freezes_cursor_and_stops_invalidation() -> None:
    core = core_with(["a"], d=(0, "durable", True))
    assert core.disconnect("d") == (True, frozenset({"d"}))
    assert core.read_stream("d") is None
    assert core.publish("b").invalidated == frozenset()
    assert core.advance("d") == (None, frozenset())
    assert core.subscription("d") == {"durability": "durable", "connected": False, "cursor": 0}
    assert core.elements() == ["a", "b"]
    assert core.reconnect("d") == (True, frozenset({"d"}))
    assert core.read_stream("d") == ["a", "b"]


def test_e17_invalidation_is_structural() -> None:
    core: TopicCore[Any] = TopicCore()
    assert core.subscribe("s").invalidated == frozenset({"s"})  # unavailable -> []
    assert core.disconnect("s").invalidated == frozenset({"s"})  # [] -> unavailable
    assert core.read_stream("s") is None


def test_e18_publish_invalidates_every_connected_and_no_offline() -> None:
    core = core_with(["a"], behind=(0, "durable", True), tail=(1, "durable", True),
                     eph=(1, "ephemeral", True), off=(0, "durable", False))
    assert core.publish("b") == (1, frozenset({"behind", "tail", "eph"}))
    for sub in ("behind", "tail", "eph"):
        core.disconnect(sub)
    assert core.publish("c") == (2, frozenset())


def test_e19_advance_returns_old_cursor_element_and_noops() -> None:
    core = core_with(["x", "y"], a=(0, "durable", True), b=(0, "durable", True),
                     off=(0, "durable", False))
    assert core.advance("a") == ("x", frozenset({"a"}))
    assert core.read_stream("b") == ["x", "y"]
    assert core.advance("ghost") == (None, frozenset())
    assert core.advance("off") == (None, frozenset())
    assert core.advance("a") == ("y", frozenset({"a"}))
    assert core.advance("a") == (None, frozenset())  # at the tail
    assert core.subscription("a")["cursor"] == 2  # type: ignore[index]


def test_e20_frontier_counts_offline_durable_and_ignores_ephemeral() -> None:
    core = core_with(["a", "b", "c"], off=(1, "durable", False), eph=(0, "ephemeral", True),
                     on=(3, "durable", True))
    assert core.retention_frontier() == 1
    assert core.gc().result == 1
    assert core.base_offset() == 1 and core.elements() == ["b", "c"]
    nobody = core_with(["a", "b"], eph=(2, "ephemeral", True))
    assert nobody.gc() == (2, frozenset())
    assert nobody.base_offset() == nobody.end_offset() == 2 and nobody.elements() == []


def test_e21_gc_moves_no_cursor_and_invalidates_nobody() -> None:
    core = core_with(["a", "b", "c", "d"], slow=(2, "durable", True), fast=(4, "durable", True))
    before = core.subscriptions()
    assert core.gc() == (2, frozenset())
    assert core.subscriptions() == before
    assert core.base_offset() == 2
    assert core.gc() == (0, frozenset())


def test_e22_reads_rebase_after_gc() -> None:
    core = core_with(["a", "b", "c", "d"], slow=(2, "durable", True))
    core.gc()
    assert core.read("slow") == "c"
    assert core.read_stream("slow") == ["c", "d"]
    assert core.advance("slow") == ("c", frozenset({"slow"}))


def test_e23_snapshot_restore_loses_nothing() -> None:
    core = core_with(["c", "d"], base=2, off=(2, "durable", False), on=(3, "durable", True),
                     eph=(4, "ephemeral", True))
    snap = json.loads(json.dumps(core.snapshot()))  # plain JSON data
    again: TopicCore[Any] = TopicCore.from_snapshot(snap)
    assert again.snapshot() == core.snapshot()
    assert again.read_stream("off") is None
    assert again.publish("e").invalidated == frozenset({"on", "eph"})


def test_e24_subscriptions_and_reads_are_exact() -> None:
    core: TopicCore[Any] = TopicCore()
    core.subscribe("e", "ephemeral")
    core.subscribe("d")
    core.disconnect("e")
    core.disconnect("d")
    assert core.subscriptions() == {"d": {"durability": "durable", "connected": False,
                                          "cursor": 0}}
    assert core.connected_subscribers() == frozenset()


def test_e25_gc_clamps_lagging_ephemeral_cursor_and_invalidates_it() -> None:
    core = core_with(["a", "b", "c", "d"], d=(3, "durable", True), e=(1, "ephemeral", True),
                     e2=(4, "ephemeral", True))
    assert core.gc() == (3, frozenset({"e"}))
    assert core.subscription("e") == {"durability": "ephemeral", "connected": True, "cursor": 3}
    assert core.read_stream("e") == ["d"]
    # No stored cursor is below base, so the snapshot restores.
    TopicCore.from_snapshot(core.snapshot())


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        ({"base_offset": -1, "elements": [], "subscriptions": {}}, "base_offset"),
        ({"base_offset": True, "elements": [], "subscriptions": {}}, "base_offset"),
        ({"base_offset": 0, "elements": "ab", "subscriptions": {}}, "elements"),
        ({"base_offset": 0, "elements": [], "subscriptions": []}, "subscriptions"),
        ({"base_offset": 0, "elements": []}, "missing"),
        ({"base_offset": 0, "elements": [], "subscriptions": {}, "x": 1}, "unexpected"),
        ({"base_offset": 2, "elements": ["c"], "subscriptions": {
            "s": {"durability": "durable", "connected": True, "cursor": 1}}}, "outside"),
        ({"base_offset": 2, "elements": ["c"], "subscriptions": {
            "s": {"durability": "durable", "connected": True, "cursor": 4}}}, "outside"),
        ({"base_offset": 0, "elements": [], "subscriptions": {
            "s": {"durability": "ephemeral", "connected": False, "cursor": 0}}}, "ephemeral"),
        ({"base_offset": 0, "elements": [], "subscriptions": {
            "s": {"durability": "forever", "connected": True, "cursor": 0}}}, "durability"),
        ({"base_offset": 0, "elements": [], "subscriptions": {
            "s": {"durability": "durable", "connected": 1, "cursor": 0}}}, "connected"),
        ({"base_offset": 0, "elements": [], "subscriptions": {
            "s": {"durability": "durable", "connected": True}}}, "missing"),
        ({"base_offset": 0, "elements": [], "subscriptions": {
            1: {"durability": "durable", "connected": True, "cursor": 0}}}, "not a str"),
    ],
)
def test_e26_snapshot_restore_rejects_inconsistent_state(
    snapshot: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidSnapshot, match=message):
        TopicCore.from_snapshot(snapshot)


def test_bad_arguments_raise_clear_errors() -> None:
    core: TopicCore[Any] = TopicCore()
    with pytest.raises(ValueError, match="durability must be 'durable' or 'ephemeral'"):
        core.subscribe("s", "sticky")
    with pytest.raises(TypeError, match="subscriber id must be a str"):
        core.subscribe(7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="subscriber id must be a str"):
        core.advance(None)  # type: ignore[arg-type]


def test_reconnect_and_disconnect_of_unknown_or_connected_ids_are_noops() -> None:
    core = core_with([], e=(0, "ephemeral", True), d=(0, "durable", True))
    assert core.reconnect("ghost") == (False, frozenset())
    assert core.disconnect("ghost") == (False, frozenset())
    assert core.reconnect("e") == (False, frozenset())
    assert core.reconnect("d") == (False, frozenset())
    core.disconnect("d")
    assert core.disconnect("d") == (False, frozenset())


def test_publish_returns_absolute_offsets() -> None:
    core = core_with(["c"], base=2)
    assert core.publish("d").result == 3
    core.gc()
    assert core.publish("e").result == 4


# -- properties against the independent model ------------------------------------------

IDS = ["a", "b", "c", "d"]
OPS = st.one_of(
    st.tuples(st.just("subscribe"), st.sampled_from(IDS), st.sampled_from(["durable",
                                                                           "ephemeral"])),
    st.tuples(st.sampled_from(["reconnect", "disconnect", "advance"]), st.sampled_from(IDS)),
    st.tuples(st.just("publish"), st.integers(0, 9)),
    st.tuples(st.just("gc")),
)


def apply(target: Any, op: tuple[Any, ...]) -> tuple[Any, set[str]]:
    result = getattr(target, op[0])(*op[1:])
    value, invalidated = result
    return getattr(value, "name", value), set(invalidated)


@settings(max_examples=150, deadline=None)
@given(st.lists(OPS, max_size=40))
def test_core_matches_model_and_retention_law(ops: list[tuple[Any, ...]]) -> None:
    core: TopicCore[Any] = TopicCore()
    model = TopicModel()
    for op in ops:
        got, want = apply(core, op), apply(model, op)
        assert got == want, op
        if op[0] == "publish":
            assert got[1] == {s for s, r in model.subs.items() if r["connected"]}, (
                "publish_changes_exactly_the_connected")
        if op[0] == "advance":
            assert got[1] <= {op[1]}, "advance_changes_only_the_advanced"
        if op[0] == "gc":
            assert all(r["durability"] == "ephemeral" for s, r in model.subs.items()
                       if s in got[1])
        # Retention law: every stored cursor reads exactly what the never-GC'd log holds.
        assert core.base_offset() == model.base
        assert core.elements() == model.elements()
        assert core.subscriptions() == model.subscriptions()
        for sub in IDS:
            assert core.read_stream(sub) == model.reads().get(sub)
            record = core.subscription(sub)
            if record is not None:
                assert core.base_offset() <= record["cursor"] <= core.end_offset()
    assert TopicCore.from_snapshot(core.snapshot()).snapshot() == core.snapshot()
