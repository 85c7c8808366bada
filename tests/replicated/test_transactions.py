"""TXN in the replicated state machine: all or none, checked against what earlier ops leave."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.events import OpApplied, TransactionApplied
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _txn(sm: StateMachine, *inner: list[Any], stamp: int = 1_000) -> Any:
    return _apply(sm, [ops.TXN, *inner], stamp=stamp)[0]


def _declared() -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", 2], [ops.TOPIC_DECLARE, "t"],
           [ops.WORK_DECLARE, "w", 30_000, 3], [ops.WORK_DECLARE, "out", 30_000, 3])
    return sm


def _claimed(sm: StateMachine, worker: str = "w1") -> int:
    _apply(sm, [ops.WORK_PUSH, "w", "job"])
    [[delivery, _]] = _apply(sm, [ops.WORK_CLAIM, "w", worker, None])
    return int(delivery["delivery_id"])


def _state(sm: StateMachine) -> Any:
    return sm.capture()


def test_a_transaction_applies_every_op_and_returns_their_results_in_order() -> None:
    sm = _declared()
    d = _claimed(sm)
    ok, results = _txn(sm, [ops.WORK_ACK, "w", "w1", d], [ops.QUEUE_PUSH, "q", "x"],
                       [ops.TOPIC_PUBLISH, "t", "y"], [ops.WORK_PUSH, "out", "z"])
    assert ok is True
    assert results[0][0] is True and results[0][2][3] == "acked"
    assert results[1:] == [None, 0, [0, results[3][1]]]
    assert sm.work_queues["w"].core.in_flight_len() == 0
    assert sm.queues["q"].elements() == ["x"]
    assert sm.topics["t"].elements() == ["y"]
    assert [i.value for i in sm.work_queues["out"].core.pending()] == ["z"]
    assert sm.work_queues["w"].receipts[d][3] == "acked"


@pytest.mark.parametrize("bad, code", [
    ([ops.QUEUE_PUSH, "nope", 1], "unknown_queue"),
    ([ops.TOPIC_PUBLISH, "nope", 1], "unknown_topic"),
    ([ops.WORK_PUSH, "nope", 1], "unknown_work_queue"),
    ([ops.WORK_ACK, "w", "w2", 0], "not_leased"),
    ([ops.WORK_NACK, "w", "w1", 99], "not_leased"),
    ([ops.WORK_ACK, "w", 5, 0], "bad_worker"),
    ([ops.QUEUE_POP, "q"], "bad_op"),
    ([ops.QUEUE_PUSH, "q"], "bad_args"),
    ([ops.QUEUE_PUSH_ONCE, "q", "", 1], "bad_msg_id"),
    ("junk", "bad_op"),
])
def test_one_failing_op_aborts_the_whole_transaction(bad: Any, code: str) -> None:
    sm = _declared()
    d = _claimed(sm)
    before = _state(sm)
    sm.drain_events()
    result = _txn(sm, [ops.QUEUE_PUSH, "q", "x"], [ops.TOPIC_PUBLISH, "t", "y"],
                  [ops.WORK_PUSH_ONCE, "out", "m1", "z"], bad, [ops.WORK_ACK, "w", "w1", d])
    assert result[:3] == [False, 3, code]
    assert isinstance(result[3], str) and result[3]
    after = _state(sm)
    before["sessions"] = after["sessions"] = None  # the TXN's own session record
    assert after == before
    assert sm.drain_events() == [TransactionApplied(False, 5)]


def test_pushes_are_checked_against_the_earlier_pushes_of_the_transaction() -> None:
    sm = _declared()  # q holds at most 2
    _apply(sm, [ops.QUEUE_PUSH, "q", "a"])
    assert _txn(sm, [ops.QUEUE_PUSH, "q", "b"], [ops.QUEUE_PUSH, "q", "c"])[:3] == \
        [False, 1, "full"]
    assert sm.queues["q"].elements() == ["a"]
    assert _txn(sm, [ops.QUEUE_PUSH, "q", "b"]) == [True, [None]]
    assert sm.queues["q"].elements() == ["a", "b"]


def test_a_closed_queue_aborts_before_a_full_one() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH, "q", "a"], [ops.QUEUE_PUSH, "q", "b"], [ops.QUEUE_CLOSE, "q"])
    assert _txn(sm, [ops.QUEUE_PUSH, "q", "c"])[:3] == [False, 0, "closed"]


def test_a_delivery_settles_once_per_transaction() -> None:
    sm = _declared()
    d = _claimed(sm)
    result = _txn(sm, [ops.WORK_ACK, "w", "w1", d], [ops.WORK_NACK, "w", "w1", d])
    assert result[:3] == [False, 1, "not_leased"]
    assert sm.work_queues["w"].core.in_flight_len() == 1


def test_a_reaped_lease_aborts_the_transaction() -> None:
    sm = _declared()
    d = _claimed(sm)
    _apply(sm, [ops.WORK_REAP, "w", None], stamp=1_000 + 30_001)
    result = _txn(sm, [ops.WORK_ACK, "w", "w1", d], [ops.WORK_PUSH, "out", "r"],
                  stamp=1_000 + 30_002)
    assert result[:3] == [False, 0, "not_leased"]
    assert sm.work_queues["out"].core.pending_len() == 0
    assert sm.work_queues["w"].core.pending_len() == 1  # back for another worker


def test_msg_ids_in_a_transaction_apply_once_and_never_abort_it() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_ONCE, "q", "m1", "a"], [ops.QUEUE_PUSH, "q", "b"])  # full
    ok, results = _txn(sm, [ops.QUEUE_PUSH_ONCE, "q", "m1", "a"],
                       [ops.WORK_PUSH_ONCE, "out", "m2", "z"],
                       [ops.WORK_PUSH_ONCE, "out", "m2", "z"])
    assert ok is True
    assert results[0] is None and results[2] == results[1]
    assert sm.work_queues["out"].core.pending_len() == 1
    # The id recorded by the transaction deduplicates a later plain push.
    assert _apply(sm, [ops.WORK_PUSH_ONCE, "out", "m2", "z"]) == [results[1]]
    assert sm.work_queues["out"].core.pending_len() == 1


def test_an_aborted_transaction_records_no_msg_id() -> None:
    sm = _declared()
    assert _txn(sm, [ops.WORK_PUSH_ONCE, "out", "m3", "z"], [ops.QUEUE_PUSH, "x", 1])[0] \
        is False
    assert _apply(sm, [ops.WORK_PUSH_ONCE, "out", "m3", "z"])[0][0] == 0
    assert sm.work_queues["out"].core.pending_len() == 1


def test_a_retried_transaction_returns_its_first_result() -> None:
    sm = _declared()
    batch = encode_command(7, 0, [[1, ops.TXN, [ops.QUEUE_PUSH, "q", "a"]]])
    first = sm.apply(batch, 1_000)
    assert sm.apply(batch, 2_000) == first == [[True, [None]]]
    assert sm.queues["q"].elements() == ["a"]


def test_the_ops_of_a_transaction_are_reported_to_mirrors_as_plain_ops() -> None:
    sm = _declared()
    sm.tap = {("queue", "q"), ("work_queue", "out")}
    _txn(sm, [ops.QUEUE_PUSH_ONCE, "q", "m", "a"], [ops.WORK_PUSH, "out", "b"])
    applied = [e.op for e in sm.drain_events() if isinstance(e, OpApplied)]
    assert applied == [[ops.QUEUE_PUSH, "q", "a"], [ops.WORK_PUSH, "out", "b"]]


def test_a_committed_transaction_survives_a_snapshot() -> None:
    sm = _declared()
    d = _claimed(sm)
    _txn(sm, [ops.WORK_ACK, "w", "w1", d], [ops.QUEUE_PUSH_ONCE, "q", "m", "a"])
    restored = StateMachine()
    restored.restore(sm.capture())
    assert restored.capture() == sm.capture()
    assert restored.queues["q"].elements() == ["a"]
    assert restored.work_queues["w"].core.in_flight_len() == 0
    assert _apply(restored, [ops.QUEUE_PUSH_ONCE, "q", "m", "a"], stamp=2_000) == [None]
    assert restored.queues["q"].elements() == ["a"]


def test_a_transaction_of_too_many_ops_is_aborted() -> None:
    sm = _declared()
    result = _txn(sm, *([ops.TOPIC_PUBLISH, "t", 1] for _ in range(1025)))
    assert result[:3] == [False, 0, "too_many_ops"]
    assert sm.topics["t"].end_offset() == 0


def test_an_empty_transaction_commits_nothing() -> None:
    sm = _declared()
    assert _txn(sm) == [True, []]


def test_a_push_with_options_counts_the_delayed_elements_it_makes_ready_first() -> None:
    """A push with options promotes the due delayed elements before it pushes; the check
    counted only the ready ones, so the push failed while applying and the rest of the
    transaction applied without it, reported committed."""
    sm = _declared()  # "q" holds at most 2 ready elements
    _apply(sm, [ops.QUEUE_PUSH, "q", "ready"], stamp=1_000)
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100}, "delayed"], stamp=1_000)
    result = _txn(sm, [ops.TOPIC_PUBLISH, "t", "audit"],
                  [ops.QUEUE_PUSH_OPTIONS, "q", {"ttl_ms": 600_000}, "x"], stamp=2_000)
    assert result[:3] == [False, 1, "full"]
    assert sm.topics["t"].elements() == []  # nothing of it applied
    # Twice in one transaction: the due element is counted once.
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100}, "delayed"], stamp=1_000)
    result = _txn(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"ttl_ms": 600_000}, "x"],
                  [ops.QUEUE_PUSH_OPTIONS, "q", {"ttl_ms": 600_000}, "y"], stamp=2_000)
    assert result[:3] == [False, 1, "full"]
    assert _txn(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"ttl_ms": 600_000}, "x"],
                stamp=2_000)[0] is True
    assert sm.queues["q"].elements() == ["delayed", "x"]
