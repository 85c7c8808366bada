"""A consumer group restored from a snapshot of the older form (its items and deadlines
listed one by one) takes its topic's elements as a run again, and their deadlines as
the run's when they are the ones its topic's rules give: the snapshots it writes then
hold them once. Anything else it holds is restored as it is listed."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.work_retained import RetainedPending
from lazily_queue.raft.snapshot import encode_snapshot
from lazily_queue.raft.snapshot_format import decode_snapshot
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import StateMachine

from .group_forms import older_form

N = 5_000


def _apply(sm: StateMachine, code: int, *args: object) -> Any:
    return sm.apply_plain(code, list(args))


def _topic(expiry: bool, values: Any = str) -> StateMachine:
    """A topic of ``N`` elements (with ``expiry``: an age limit, and a ttl of its own on
    every 100th), a group declared at its head that claimed three and released the
    first, then one more element."""
    sm = StateMachine()
    _apply(sm, ops.TOPIC_DECLARE, "t")
    if expiry:
        _apply(sm, ops.EXPIRY_RULES, "t", "topic", None, 60_000)
    for i in range(N):
        sm.now = 1_000 + i // 10
        if expiry and i % 100 == 7:
            _apply(sm, ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 500}, values(i))
        else:
            _apply(sm, ops.TOPIC_PUBLISH, "t", values(i))
    _apply(sm, ops.GROUP_DECLARE, "t", "g", 1000, 3, "head")
    first, _ = _apply(sm, ops.WORK_CLAIM, "t:g", "w", 0)
    _apply(sm, ops.WORK_CLAIM_MANY, "t:g", "w", 2, 0)
    _apply(sm, ops.WORK_RELEASE, "t:g", "w", [first["delivery_id"]])
    _apply(sm, ops.TOPIC_PUBLISH, "t", values(N))
    return sm


def _file(state: dict[str, Any]) -> bytes:
    return encode_snapshot({"format": 1, "state": state, "last": [b"b", 9, 1],
                            "prev": [b"a", 8, 1], "members": ["1"]})


def _restored(state: dict[str, Any]) -> StateMachine:
    sm = StateMachine()
    sm.restore(decode_snapshot(_file(state))["state"])
    return sm


def _same_from_now_on(a: StateMachine, b: StateMachine) -> None:
    for machine in (a, b):
        machine.now = 1_000 + N // 10 + 30_000  # past the own ttls, not the age limit
    for op in ([ops.EXPIRE, "t:g", "work_queue"], [ops.WORK_CLAIM_MANY, "t:g", "v", 40, None],
               [ops.TOPIC_PUBLISH, "t", "later"], [ops.WORK_CLAIM_MANY, "t:g", "v", 9, None]):
        assert _apply(a, *op) == _apply(b, *op), op
    assert [p.to_dict() for p in a.work_queues["t:g"].core.pending()] == [
        p.to_dict() for p in b.work_queues["t:g"].core.pending()]
    for machine in (a, b):
        machine.now += 60_000  # past the age limit
    assert _apply(a, ops.EXPIRE, "t:g", "work_queue") == _apply(b, ops.EXPIRE, "t:g",
                                                                "work_queue")


@pytest.mark.parametrize("expiry", [False, True])
def test_a_group_restored_from_the_older_form_writes_a_run_again(expiry: bool) -> None:
    sm = _topic(expiry)
    older = older_form(sm)
    assert len(older["work_queues"]["t:g"]["core"]["pending"]) == N - 1  # 0, 3..N
    restored = _restored(older)
    pending = restored.work_queues["t:g"].core._pending
    assert isinstance(pending, RetainedPending) and pending.run_len() == N - 2  # 3..N
    state = restored.capture()
    assert state["work_queues"]["t:g"]["core"]["run"] == [1, 3, N - 2, []]
    if expiry:  # the deadlines as the run's rules, none listed
        record = state["expiry"]["work_queue"]["t:g"]
        assert record[3] == [] and record[6][:4] == [3, N + 1, 60_000, []]
        assert record[6][4] == [list(range(7, N, 100)), [1] * (N // 100), [500] * (N // 100)]
        assert restored.expiry[("work_queue", "t:g")].held_deadlines() == sm.expiry[
            ("work_queue", "t:g")].held_deadlines()
    sizes = [len(_file(s)) for s in (sm.capture(), older, state)]
    assert sizes[2] < sizes[0] + 1_000 < sizes[1], sizes
    _same_from_now_on(restored, sm)


def test_values_equal_but_of_other_types_are_not_taken_for_the_topics() -> None:
    sm = _topic(False, values=int)
    older = older_form(sm)
    for rec in older["work_queues"]["t:g"]["core"]["pending"][2:]:
        rec["value"] = float(rec["value"])  # 7.0 == 7: the same value, not the same type
    restored = _restored(older)
    pending = restored.work_queues["t:g"].core._pending
    assert not isinstance(pending, RetainedPending) or not pending.run_len()
    assert [type(p.value) for p in restored.work_queues["t:g"].core.pending()][-2:] == [
        float, float]
    assert restored.work_queues["t:g"].core.snapshot()["pending"][-1]["value"] == float(N)


def test_deadlines_other_than_the_topics_rules_give_stay_listed() -> None:
    sm = StateMachine()
    _apply(sm, ops.TOPIC_DECLARE, "t")
    for i in range(300):  # own ttls only, then the topic takes an age limit
        sm.now = 1_000 + i
        _apply(sm, ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 90_000}, str(i))
    _apply(sm, ops.GROUP_DECLARE, "t", "g", 1000, 3, "head")
    _apply(sm, ops.EXPIRY_RULES, "t", "topic", None, 60_000)
    restored = _restored(older_form(sm))
    pending = restored.work_queues["t:g"].core._pending
    assert isinstance(pending, RetainedPending) and pending.run_len() == 300
    record = restored.expiry[("work_queue", "t:g")]
    assert record.retained is None and len(record.deadlines) == 300
    assert record.held_deadlines() == sm.expiry[("work_queue", "t:g")].held_deadlines()
    for machine in (sm, restored):
        machine.now = 1_150 + 60_000  # the age limit came after: it ends none of them
    assert _apply(restored, ops.EXPIRE, "t:g", "work_queue") == _apply(
        sm, ops.EXPIRE, "t:g", "work_queue") == 0


def test_a_group_of_a_topic_restored_by_an_op_is_restored_as_it_is_written() -> None:
    sm = _topic(False)
    elements = sm.topics["t"].elements()
    _apply(sm, ops.TOPIC_RESTORE, "t", {"base_offset": 0, "subscriptions": {},
                                         "elements": elements})  # the same values
    state = sm.capture()
    assert state["work_queues"]["t:g"]["topic_log"] is False
    restored = _restored(state)
    assert restored.work_queues["t:g"].lineage is None
    assert restored.capture() == sm.capture()  # not taken for its topic's again
