"""Deduplicated pushes in the replicated state machine: window, bounds, snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.dedup import DedupLimits
from lazily_queue.replicated import ops
from lazily_queue.replicated.dedup import limits_args
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _declared(**limits: Any) -> StateMachine:
    sm = StateMachine()
    if limits:
        assert _apply(sm, [ops.DEDUP_LIMITS, *limits_args(DedupLimits(**limits))]) == [None]
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.TOPIC_DECLARE, "t"],
           [ops.WORK_DECLARE, "w", 30_000, 3])
    return sm


def test_a_repeated_msg_id_applies_once_and_returns_the_first_result() -> None:
    sm = _declared()
    first = _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "m1", "a"],
                   [ops.TOPIC_PUBLISH_ONCE, "t", "m1", "a"],
                   [ops.WORK_PUSH_ONCE, "w", "m1", "a"])
    again = _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "m1", "a"],
                   [ops.TOPIC_PUBLISH_ONCE, "t", "m1", "a"],
                   [ops.WORK_PUSH_ONCE, "w", "m1", "a"], stamp=2_000)
    assert again == first
    assert first[1] == 0 and first[2][0] == 0  # the topic offset, the work item id
    assert sm.queues["q"].elements() == ["a"]
    assert sm.topics["t"].end_offset() == 1
    assert sm.work_queues["w"].core.pending_len() == 1
    assert sm.dedup.hits == 3


def test_ids_are_scoped_per_object_and_plain_pushes_are_not_deduplicated() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_DECLARE, "r", None])
    _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "m", 1], [ops.QUEUE_PUSH_ONCE, "r", "m", 2],
           [ops.QUEUE_PUSH, "q", 3], [ops.QUEUE_PUSH, "q", 3])
    assert sm.queues["q"].elements() == [1, 3, 3]
    assert sm.queues["r"].elements() == [2]


def test_a_refused_push_is_not_recorded() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_DECLARE, "small", 1], [ops.QUEUE_PUSH, "small", "x"])
    full = _apply(sm, [ops.QUEUE_PUSH_ONCE, "small", "m", "y"])
    assert full[0] is not None  # Full
    _apply(sm, [ops.QUEUE_POP, "small"])
    assert _apply(sm, [ops.QUEUE_PUSH_ONCE, "small", "m", "y"]) == [None]
    assert sm.queues["small"].elements() == ["y"]


def test_the_window_is_bounded_by_count_and_by_leader_time() -> None:
    sm = _declared(max_entries=2, max_age=10.0)
    _apply(sm, *[[ops.QUEUE_PUSH_ONCE, "q", f"m{i}", i] for i in range(3)])
    assert len(sm.dedup) == 2
    _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "m0", "again"])  # m0 left by count
    assert sm.queues["q"].elements() == [0, 1, 2, "again"]
    # m2 is 10 s + 1 ms old at the next stamp: forgotten, applies again
    _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "m2", "late"], stamp=11_001)
    assert sm.queues["q"].elements()[-1] == "late"


def test_one_window_bounds_the_ids_of_every_object_together() -> None:
    # As the README says: max_entries counts every cell's ids, so the window's memory
    # does not grow with the number of cells, and a busy cell's ids push out another's.
    sm = _declared(max_entries=2, max_age=300.0)
    _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "order-1", "a"])
    _apply(sm, *[[ops.WORK_PUSH_ONCE, "w", f"job-{i}", i] for i in range(2)])
    assert len(sm.dedup) == 2
    _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "order-1", "a"], stamp=2_000)  # within max_age
    assert sm.queues["q"].elements() == ["a", "a"]


def test_bad_msg_ids_and_shapes_are_refused_without_applying() -> None:
    sm = _declared()
    results = _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "", "a"],
                     [ops.QUEUE_PUSH_ONCE, "q", 5, "a"],
                     [ops.QUEUE_PUSH_ONCE, "q", "x" * 257, "a"],
                     [ops.QUEUE_PUSH_ONCE, "q", "a"])
    assert [r.code for r in results] == ["bad_msg_id"] * 3 + ["bad_args"]
    assert sm.queues["q"].len() == 0


def test_the_window_survives_a_snapshot_and_an_old_snapshot_loads_empty() -> None:
    sm = _declared()
    _apply(sm, [ops.WORK_PUSH_ONCE, "w", "m", "job"])
    doc = sm.capture()
    assert doc["dedup"][0][:3] == ["work_queue", "w", "m"]
    restored = StateMachine()
    restored.restore(doc)
    assert _apply(restored, [ops.WORK_PUSH_ONCE, "w", "m", "job"])[0][0] == 0
    assert restored.work_queues["w"].core.pending_len() == 1
    old = dict(doc)
    del old["dedup"]  # what a version without the window captured
    fresh = StateMachine()
    fresh.restore(old)
    assert len(fresh.dedup) == 0
    # an empty window adds nothing to the snapshot
    assert "dedup" not in _declared().capture()


def test_a_damaged_dedup_section_is_refused_with_its_name() -> None:
    doc = _declared().capture()
    doc["dedup"] = [["queue", "q"]]
    with pytest.raises(ValueError, match="'dedup'"):
        StateMachine().validate(doc)


def test_a_client_retrying_with_a_new_session_sequence_still_applies_once() -> None:
    sm = _declared()
    client = 2**62 + 9
    first = _apply(sm, [ops.CLIENT_OP, client, 1, 1, ops.QUEUE_PUSH_ONCE, "q", "m", "a"])
    again = _apply(sm, [ops.CLIENT_OP, client, 2, 2, ops.QUEUE_PUSH_ONCE, "q", "m", "a"])
    assert first == again == [None]
    assert sm.queues["q"].elements() == ["a"]
    assert not isinstance(first[0], OpError)


def test_the_bounds_are_replicated_state_set_only_by_their_op() -> None:
    sm = _declared()
    assert sm.dedup.limits == DedupLimits()
    _apply(sm, *[[ops.QUEUE_PUSH_ONCE, "q", f"m{i}", i] for i in range(4)], stamp=1_000)
    # narrowing the window drops the oldest ids at once, then ages on the leader's stamp
    _apply(sm, [ops.DEDUP_LIMITS, 2, 5_000], stamp=2_000)
    assert sm.dedup.limits == DedupLimits(max_entries=2, max_age=5.0)
    assert [key[2] for key, _, _ in sm.dedup.items()] == ["m2", "m3"]
    doc = sm.capture()
    assert doc["dedup_limits"] == [2, 5_000]
    restored = StateMachine()
    restored.restore(doc)
    assert restored.dedup.limits == sm.dedup.limits
    _apply(restored, [ops.QUEUE_PUSH_ONCE, "q", "m3", "again"], stamp=6_001)
    assert restored.queues["q"].elements()[-1] == "again"  # m3 aged out after 5 s
    # the default bounds add nothing to the snapshot, and a snapshot without them has them
    assert "dedup_limits" not in _declared().capture()
    del doc["dedup_limits"]
    fresh = StateMachine()
    fresh.restore(doc)
    assert fresh.dedup.limits == DedupLimits()


@pytest.mark.parametrize("args", [[], [0, 1000], [5, 0], [5], ["5", 1000], [5, 1.5], [True, 9]])
def test_bad_bounds_are_refused_and_change_nothing(args: list[Any]) -> None:
    sm = _declared(max_entries=7, max_age=9.0)
    result = _apply(sm, [ops.DEDUP_LIMITS, *args])
    assert isinstance(result[0], OpError) and result[0].code == "bad_args"
    assert sm.dedup.limits == DedupLimits(max_entries=7, max_age=9.0)


def test_a_damaged_bounds_section_is_refused_with_its_name() -> None:
    doc = _declared(max_entries=3).capture()
    doc["dedup_limits"] = [3]
    with pytest.raises(ValueError, match="'dedup_limits'"):
        StateMachine().validate(doc)
