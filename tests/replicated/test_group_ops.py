"""Consumer groups in the replicated state machine: declared, fed by publishes, carried
by snapshots, deleted with their topic."""

from __future__ import annotations

import tracemalloc

import pytest

from lazily_queue.core.work_items import PendingItem
from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine


def _apply(sm: StateMachine, code: int, *args: object) -> object:
    return sm.apply_plain(code, list(args))


def test_a_group_is_fed_by_every_publish_and_kept_by_a_snapshot() -> None:
    sm = StateMachine()
    _apply(sm, ops.TOPIC_DECLARE, "t")
    _apply(sm, ops.TOPIC_PUBLISH, "t", "old")
    assert _apply(sm, ops.GROUP_DECLARE, "t", "g", 1000, 3, "tail") == ["ok", None]
    assert _apply(sm, ops.GROUP_DECLARE, "t", "h", 1000, 3, "head") == ["ok", None]
    assert _apply(sm, ops.GROUP_DECLARE, "t", "x", 1000, 3, 5) == ["out_of_range", 5, 0, 1]
    _apply(sm, ops.TOPIC_PUBLISH, "t", "a")
    g, h = sm.work_queues["t:g"].core, sm.work_queues["t:h"].core
    assert [(p.item_id, p.value) for p in g.pending()] == [(1, "a")]
    assert [(p.item_id, p.value) for p in h.pending()] == [(0, "old"), (1, "a")]
    # a snapshot carries the groups; the restored state keeps feeding them
    restored = StateMachine()
    restored.restore(sm.capture())
    _apply(restored, ops.TOPIC_PUBLISH, "t", "b")
    assert [p.value for p in restored.work_queues["t:g"].core.pending()] == ["a", "b"]
    assert restored.capture()["work_queues"]["t:g"]["group"] == ["t", "g"]
    # deleting the topic deletes its groups
    _apply(restored, ops.TOPIC_DELETE, "t")
    assert restored.work_queues == {} and restored.groups == {}


def test_a_group_refuses_pushes_other_settings_and_its_name_as_a_work_queue() -> None:
    sm = StateMachine()
    _apply(sm, ops.GROUP_DECLARE, "t", "g", 1000, 3, "tail")  # declares the topic too
    assert "t" in sm.topics
    for code, args in ((ops.WORK_PUSH, ["t:g", 1]), (ops.WORK_PUSH_ONCE, ["t:g", "m", 1]),
                       (ops.WORK_DECLARE, ["t:g", 1000, 3]),
                       (ops.GROUP_DECLARE, ["t", "g", 2000, 3, "tail"])):
        result = _apply(sm, code, *args)
        assert isinstance(result, OpError), (code, result)
        assert result.code in ("group_push", "name_taken", "config_mismatch")
    assert sm.work_queues["t:g"].core.pending_len() == 0
    _apply(sm, ops.WORK_DECLARE, "u:g", 1000, 3)
    result = _apply(sm, ops.GROUP_DECLARE, "u", "g", 1000, 3, "tail")
    assert isinstance(result, OpError) and result.code == "name_taken"
    # deleting the group's work queue stops the feeding
    _apply(sm, ops.WORK_DELETE, "t:g")
    _apply(sm, ops.TOPIC_PUBLISH, "t", "a")
    assert "t:g" not in sm.work_queues and sm.groups == {}


def test_a_transaction_pushing_to_a_group_aborts_whole() -> None:
    sm = StateMachine()
    _apply(sm, ops.QUEUE_DECLARE, "q", None)
    _apply(sm, ops.GROUP_DECLARE, "t", "g", 1000, 3, "tail")
    result = sm.apply_plain(ops.TXN, [[ops.QUEUE_PUSH, "q", "a"], [ops.WORK_PUSH, "t:g", "b"]])
    assert isinstance(result, list) and result[0] is False and result[2] == "group_push"
    assert sm.queues["q"].len() == 0  # nothing applied
    # a publish inside a transaction feeds the group as a plain publish does
    assert sm.apply_plain(ops.TXN, [[ops.TOPIC_PUBLISH, "t", "c"]])[0] is True
    assert [p.value for p in sm.work_queues["t:g"].core.pending()] == ["c"]


def _blocks_made_by(sm: StateMachine, code: int, *args: object) -> int:
    """How many memory blocks applying the op allocated and kept."""
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        assert _apply(sm, code, *args) == ["ok", None]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return sum(stat.count_diff for stat in after.compare_to(before, "filename")
               if stat.count_diff > 0)


@pytest.mark.parametrize("expiry", [False, True])
def test_declaring_a_group_at_the_head_does_no_work_per_retained_element(expiry: bool) -> None:
    sm = StateMachine()
    _apply(sm, ops.TOPIC_DECLARE, "t")
    if expiry:  # the topic's age limit, and a per-message ttl on some elements
        _apply(sm, ops.EXPIRY_RULES, "t", "topic", 60_000, None)
    for i in range(20_000):
        sm.now = 1_000 + i // 7  # a stamp per few elements: many stamp points
        if expiry and i % 5 == 0:
            _apply(sm, ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 30_000}, f"m{i}")
        else:
            _apply(sm, ops.TOPIC_PUBLISH, "t", f"m{i}")
    made = _blocks_made_by(sm, ops.GROUP_DECLARE, "t", "g", 1000, 3, "head")
    assert made < 200, f"declaring a group of 20,000 retained elements made {made} blocks"
    core = sm.work_queues["t:g"].core
    assert core.pending_len() == 20_000 and core.head() == PendingItem(0, "m0", 0)
    if expiry:  # the retained elements' deadlines: their own ttl or the topic's age
        rules = sm.expiry[("work_queue", "t:g")]
        assert [rules.deadline(i, core.stamp_of(i)) for i in (0, 1, 19_999)] == [
            31_000, 61_000, 1_000 + 19_999 // 7 + 60_000]
