"""WorkQueueCore: the work-queue rules (spec §4, edge cases E27-E40) and its safety laws."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_work_models import WorkModel

from lazily_queue import (
    DeadLetter,
    Delivery,
    InvalidConfiguration,
    InvalidSnapshot,
    PendingItem,
    WorkQueueCore,
    WorkReader,
)
from lazily_queue.core.work import change_mask

P, E, F, D = (WorkReader.PENDING_LEN, WorkReader.IS_EMPTY, WorkReader.IN_FLIGHT_LEN,
              WorkReader.DEAD_LETTER_LEN)


def claimed(core: WorkQueueCore, worker: str, now: float) -> Delivery:
    delivery = core.claim(worker, now).result
    assert delivery is not None
    return delivery


def test_e27_lease_live_at_deadline_and_reap_is_strict() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    claimed(core, "w", 0)
    assert core.reap_expired(10) == (0, 0)
    assert core.reap_expired(11) == (1, P | E | F)


def test_e28_deadline_fixed_at_claim_time() -> None:
    core = WorkQueueCore(7)
    core.push("a")
    assert claimed(core, "w", 100).deadline == 107
    core.reap_expired(50)
    assert core.in_flight()[0].deadline == 107


def test_e29_attempts_count_deliveries_made() -> None:
    core = WorkQueueCore(10, max_deliveries=5)
    core.push("a")
    assert core.pending() == [PendingItem(0, "a", 0)]
    first = claimed(core, "w", 0)
    assert first.attempt == 1
    core.nack("w", first.delivery_id)
    assert core.pending() == [PendingItem(0, "a", 1)]
    assert claimed(core, "w", 0).attempt == 2


def test_e30_dead_letter_at_max_deliveries() -> None:
    one = WorkQueueCore(10, max_deliveries=1)
    one.push("a")
    assert one.nack("w", claimed(one, "w", 0).delivery_id) == (True, F | D)
    assert one.dead_letters() == [DeadLetter(0, "a", 1, "nack")]  # type: ignore[arg-type]
    two = WorkQueueCore(10, max_deliveries=2)
    two.push("a")
    two.nack("w", claimed(two, "w", 0).delivery_id)
    claimed(two, "w", 0)
    assert two.reap_expired(11).result == 1
    assert [d.to_dict() for d in two.dead_letters()] == [
        {"item_id": 0, "value": "a", "attempts": 2, "reason": "expired"}]


def test_e31_reason_spellings() -> None:
    core = WorkQueueCore(1, max_deliveries=1)
    core.push("n")
    core.push("x")
    core.nack("w", claimed(core, "w", 0).delivery_id)
    claimed(core, "w", 0)
    core.reap_expired(2)
    assert [d.to_dict()["reason"] for d in core.dead_letters()] == ["nack", "expired"]
    assert all(type(d.to_dict()["reason"]) is str for d in core.dead_letters())


def test_e32_separate_counters_and_new_delivery_id_on_redelivery() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    core.push("b")
    d0 = claimed(core, "w", 0)
    core.ack("w", d0.delivery_id)
    d1 = claimed(core, "w", 0)
    core.nack("w", d1.delivery_id)
    d2 = claimed(core, "w", 0)
    assert [(d.delivery_id, d.item_id) for d in (d0, d1, d2)] == [(0, 0), (1, 1), (2, 1)]
    assert d2.value == "b"
    assert core.next_ids() == (2, 3)


def test_e33_settlement_needs_matching_worker_and_live_id() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    d = claimed(core, "alice", 0)
    before = core.snapshot()
    assert core.ack("bob", d.delivery_id) == (False, 0)
    assert core.nack("bob", d.delivery_id) == (False, 0)
    assert core.ack("alice", 99) == (False, 0)
    assert core.snapshot() == before
    assert core.ack("alice", d.delivery_id) == (True, F)
    assert core.ack("alice", d.delivery_id) == (False, 0)  # re-ack
    core.push("b")
    stale = claimed(core, "alice", 0)
    core.reap_expired(11)
    assert core.ack("alice", stale.delivery_id) == (False, 0)  # stale after reap
    assert core.nack("alice", stale.delivery_id) == (False, 0)


def test_e34_time_does_not_act_on_its_own() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    core.push("b")
    late = claimed(core, "w", 0)
    claimed(core, "w", 500)  # a later claim does not reap
    assert core.in_flight_len() == 2
    assert core.ack("w", late.delivery_id).result is True


def test_e35_reap_in_ascending_delivery_id_one_mask() -> None:
    core = WorkQueueCore(10, max_deliveries=1)
    for v in "abc":
        core.push(v)
    claimed(core, "w", 5)  # deadline 15
    claimed(core, "w", 0)  # deadline 10
    claimed(core, "w", 3)  # deadline 13
    assert core.reap_expired(20) == (3, F | D)
    assert [d.value for d in core.dead_letters()] == ["a", "b", "c"]


def test_e36_requeue_goes_to_the_tail() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    d = claimed(core, "w", 0)
    core.push("b")
    core.nack("w", d.delivery_id)
    assert [p.value for p in core.pending()] == ["b", "a"]


def test_e37_is_empty_is_pending_only() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    core.push("b")
    assert core.claim("w", 0).mask == P | F  # "b" still pending
    d = claimed(core, "w", 0)
    assert core.is_empty() and core.in_flight_len() == 2
    core.push("c")
    assert core.nack("w", d.delivery_id).mask == P | F  # into a non-empty pending list


def test_e38_claim_on_empty_is_null_and_invalidates_nothing() -> None:
    core = WorkQueueCore(10)
    assert core.claim("w", 0) == (None, 0)
    assert core.next_ids() == (0, 0)


def test_e39_record_key_sets_are_exact() -> None:
    core = WorkQueueCore(10, max_deliveries=1)
    core.push("a")
    core.push("b")
    d = claimed(core, "w", 0)
    assert set(core.pending()[0].to_dict()) == {"item_id", "value", "attempts"}
    assert set(d.to_dict()) == {"delivery_id", "item_id", "value", "worker", "attempt",
                                "deadline"}
    core.nack("w", d.delivery_id)
    assert set(core.dead_letters()[0].to_dict()) == {"item_id", "value", "attempts", "reason"}
    claimed(core, "x", 0)
    core.push("c")
    claimed(core, "y", 0)
    assert [x.delivery_id for x in core.in_flight()] == [1, 2]


@pytest.mark.parametrize(
    ("vt", "mx", "message"),
    [(0, 3, "visibility_timeout must be a number > 0, got 0"),
     (-5, 3, "got -5"), (math.inf, 3, "got inf"), ("10", 3, "got '10'"), (True, 3, "True"),
     (10, 0, "max_deliveries must be an int >= 1, got 0"), (10, 1.5, "got 1.5")],
)
def test_e40_configuration_is_validated(vt: Any, mx: Any, message: str) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        WorkQueueCore(vt, mx)
    assert issubclass(InvalidConfiguration, ValueError)


def test_e40_now_and_arguments_are_validated() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    with pytest.raises(ValueError, match=r"now must be a finite time from 0 to 2\*\*53, got -1"):
        core.claim("w", -1)
    with pytest.raises(ValueError, match="nan"):
        core.reap_expired(math.nan)
    with pytest.raises(TypeError, match="now must be an int or float"):
        core.claim("w", "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="worker must be a str"):
        core.claim(1, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="delivery_id must be an int"):
        core.ack("w", True)
    with pytest.raises(ValueError, match="-3"):
        core.extend_lease("w", 0, -3)
    assert core.pending_len() == 1  # nothing changed


def test_extend_lease_is_ownership_checked_and_invalidates_nothing() -> None:
    core = WorkQueueCore(10)
    core.push("a")
    d = claimed(core, "w", 0)
    assert core.extend_lease("other", d.delivery_id, 5) == (False, 0)
    assert core.extend_lease("w", d.delivery_id, 5) == (True, 0)
    assert core.in_flight()[0].deadline == 15
    assert core.reap_expired(15) == (0, 0)
    assert core.reap_expired(16).result == 1


def test_redrive_moves_dead_letters_to_the_pending_tail() -> None:
    core = WorkQueueCore(10, max_deliveries=1)
    for v in "abc":
        core.push(v)
    for _ in range(3):
        core.nack("w", claimed(core, "w", 0).delivery_id)
    core.push("d")
    assert core.redrive([2]) == (1, P | D)
    assert [(p.item_id, p.attempts) for p in core.pending()] == [(3, 0), (2, 0)]
    assert core.redrive([99]) == (0, 0)
    assert core.redrive() == (2, P | D)
    assert [p.item_id for p in core.pending()] == [3, 2, 0, 1]
    assert core.dead_letter_len() == 0
    empty = WorkQueueCore(10, max_deliveries=1)
    empty.push("x")
    empty.nack("w", claimed(empty, "w", 0).delivery_id)
    assert empty.redrive() == (1, P | E | D)


def test_in_flight_by_worker() -> None:
    core = WorkQueueCore(10)
    for v in "abc":
        core.push(v)
    claimed(core, "x", 0)
    claimed(core, "y", 0)
    claimed(core, "x", 0)
    view = core.in_flight_by_worker()
    assert {w: [d.delivery_id for d in ds] for w, ds in view.items()} == {"x": [0, 2], "y": [1]}


def test_snapshot_round_trip_is_exact_including_counters() -> None:
    core = WorkQueueCore(2.5, max_deliveries=2)
    for v in ["a", {"k": [1]}, None, 3]:
        core.push(v)
    d = claimed(core, "w", 1)
    core.nack("w", d.delivery_id)
    core.nack("w", claimed(core, "w", 1).delivery_id)
    claimed(core, "v", 2)
    core.ack("v", 2)
    claimed(core, "u", 3)
    snap = json.loads(json.dumps(core.snapshot()))
    again = WorkQueueCore.from_snapshot(snap)
    assert again.snapshot() == core.snapshot()
    assert again.next_ids() == core.next_ids()
    assert again.push("z") == core.push("z")
    assert again.claim("q", 9) == core.claim("q", 9)


def _snap(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "visibility_timeout": 10, "max_deliveries": 3, "next_item_id": 3,
        "next_delivery_id": 2, "pending": [{"item_id": 0, "value": "a", "attempts": 0}],
        "in_flight": [{"delivery_id": 1, "item_id": 1, "value": "b", "worker": "w",
                       "attempt": 1, "deadline": 10}],
        "dead_letters": [{"item_id": 2, "value": "c", "attempts": 3, "reason": "nack"}],
    }
    base.update(changes)
    return base


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"visibility_timeout": 0}, "visibility_timeout"),
        ({"next_item_id": 2}, "not below next_item_id"),
        ({"next_delivery_id": 1}, "not ascending"),
        ({"pending": [{"item_id": 1, "value": "a", "attempts": 0}]}, "duplicated"),
        ({"pending": [{"item_id": 0, "value": "a"}]}, "missing"),
        ({"pending": [{"item_id": 0, "value": "a", "attempts": -1}]}, "attempts"),
        ({"in_flight": [{"delivery_id": 1, "item_id": 1, "value": "b", "worker": 5,
                         "attempt": 1, "deadline": 10}]}, "worker"),
        ({"in_flight": [{"delivery_id": 1, "item_id": 1, "value": "b", "worker": "w",
                         "attempt": 0, "deadline": 10}]}, "attempt"),
        ({"dead_letters": [{"item_id": 2, "value": "c", "attempts": 3, "reason": "x"}]},
         "reason"),
        ({"dead_letters": [{"item_id": 2, "value": "c", "attempts": 3, "reason": ["x"]}]},
         "reason"),
        ({"pending": {}}, "must be a list"),
    ],
)
def test_snapshot_restore_rejects_inconsistent_state(
    changes: dict[str, Any], message: str
) -> None:
    WorkQueueCore.from_snapshot(_snap())
    with pytest.raises(InvalidSnapshot, match=message):
        WorkQueueCore.from_snapshot(_snap(**changes))


# -- properties against the independent model ------------------------------------------

WORKERS = ["w1", "w2", "w3"]
OPS = st.one_of(
    st.tuples(st.just("push"), st.integers(0, 99)),
    st.tuples(st.just("claim"), st.sampled_from(WORKERS), st.integers(0, 60)),
    st.tuples(st.sampled_from(["ack", "nack"]), st.sampled_from(WORKERS), st.integers(0, 12)),
    st.tuples(st.just("reap_expired"), st.integers(0, 80)),
)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 20), st.integers(1, 3), st.lists(OPS, max_size=50))
def test_core_matches_model_masks_and_safety(vt: int, mx: int, ops: list[tuple[Any, ...]]) -> None:
    core = WorkQueueCore(vt, mx)
    model = WorkModel(vt, mx)
    pushed: list[int] = []
    acked: set[int] = set()
    for op in ops:
        before = (core.pending_len(), core.in_flight_len(), core.dead_letter_len())
        leased = {d.delivery_id: d.item_id for d in core.in_flight()}
        result, mask = getattr(core, op[0])(*op[1:])
        want_result, want_mask = getattr(model, op[0])(*op[1:])
        if isinstance(result, Delivery):
            result = result.to_dict()
        assert (result, mask) == (want_result, want_mask), op
        after = (core.pending_len(), core.in_flight_len(), core.dead_letter_len())
        assert mask == change_mask(before, after), "masks follow the spec table"
        if op[0] == "push":
            pushed.append(result)
        if op[0] == "ack" and result:
            acked.add(leased[op[2]])
        # no_double_delivery: at most one live delivery per item.
        live = [d.item_id for d in core.in_flight()]
        assert len(live) == len(set(live))
        # Nothing lost or duplicated: every item is in exactly one place.
        places = ([p.item_id for p in core.pending()] + live
                  + [d.item_id for d in core.dead_letters()] + sorted(acked))
        assert sorted(places) == pushed
    assert WorkQueueCore.from_snapshot(core.snapshot()).snapshot() == core.snapshot()

