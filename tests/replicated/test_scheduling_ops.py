"""Scheduling ops (100..103) on a bare state machine: priority and delayed pushes due on
the leader's stamps, delayed nacks, retry policies, promotions, refusals, snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.maintenance import due_operations
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.view import ReadView


class Session:
    def __init__(self, sm: StateMachine) -> None:
        self.sm = sm
        self.seq = 0

    def apply(self, *op_list: list[Any], stamp: int) -> list[Any]:
        first = self.seq + 1
        self.seq += len(op_list)
        batch = [[first + i, *op] for i, op in enumerate(op_list)]
        result = self.sm.apply(encode_command(5, first, batch), stamp)
        assert isinstance(result, list)
        return result


def test_priority_and_delay_follow_the_leaders_stamps() -> None:
    sm = StateMachine()
    s = Session(sm)
    s.apply([ops.WORK_DECLARE, "w", 30_000, 3],
            [ops.WORK_PUSH, "w", "plain"],
            [ops.WORK_PUSH_SCHEDULED, "w", 6, None, None, None, "urgent"],
            [ops.WORK_PUSH_SCHEDULED, "w", 0, 5_000, None, None, "later"],
            [ops.WORK_PUSH_SCHEDULED, "w", 9, None, 20_000, None, "at-20s"], stamp=10_000)
    core = sm.work_queues["w"].core
    assert [p.value for p in core.pending()] == ["urgent", "plain"]
    assert [(due, i.value) for due, i in core.delayed()] == [(15_000, "later"),
                                                              (20_000, "at-20s")]
    (leased, _), = s.apply([ops.WORK_CLAIM_MANY, "w", "a", 5, None], stamp=14_999)
    assert [d["value"] for d in leased] == ["urgent", "plain"]
    (moved, mask), = s.apply([ops.WORK_PROMOTE, "w"], stamp=15_000)
    assert moved == 1 and mask
    (moved, _), = s.apply([ops.WORK_PROMOTE, "w"], stamp=15_001)
    assert moved == 0
    (leased, _), = s.apply([ops.WORK_CLAIM_MANY, "w", "a", 5, None], stamp=20_000)
    assert [d["value"] for d in leased] == ["at-20s", "later"]  # both due: priority first


def test_nack_delayed_and_a_declared_retry_policy() -> None:
    sm = StateMachine()
    s = Session(sm)
    s.apply([ops.WORK_DECLARE_RETRY, "w", 30_000, 3, [1_000, 2, 1_500]],
            [ops.WORK_PUSH, "w", "x"], stamp=1_000)
    (d, _), = s.apply([ops.WORK_CLAIM, "w", "a", None], stamp=1_000)
    ok, _, receipt, _ = s.apply([ops.WORK_NACK, "w", "a", d["delivery_id"]], stamp=2_000)[0]
    assert ok and receipt[3] == "nacked"
    core = sm.work_queues["w"].core
    assert core.next_due() == 3_000  # policy: 1 s after the nack's stamp
    (d, _), = s.apply([ops.WORK_CLAIM, "w", "a", None], stamp=3_000)
    assert d["attempt"] == 2
    ok, *_ = s.apply([ops.WORK_NACK_DELAYED, "w", "a", d["delivery_id"], 60_000, None],
                     stamp=4_000)[0]
    assert ok and core.next_due() == 64_000  # explicit delay beats the policy
    back = StateMachine()
    back.restore(sm.capture())
    assert back.capture() == sm.capture()
    assert back.work_queues["w"].core.next_due() == 64_000
    # The same name declared without (or with another) policy is refused.
    (err,) = s.apply([ops.WORK_DECLARE, "w", 30_000, 3], stamp=5_000)
    assert isinstance(err, OpError) and err.code == "config_mismatch"


def test_bad_scheduling_args_are_refused_and_change_nothing() -> None:
    sm = StateMachine()
    s = Session(sm)
    s.apply([ops.WORK_DECLARE, "w", 30_000, 3], stamp=1)
    before = sm.capture()["work_queues"]
    for op in ([ops.WORK_PUSH_SCHEDULED, "w", 10, None, None, None, "v"],
               [ops.WORK_PUSH_SCHEDULED, "w", 1, -5, None, None, "v"],
               [ops.WORK_PUSH_SCHEDULED, "w", 1, None, "soon", None, "v"],
               [ops.WORK_DECLARE_RETRY, "x", 30_000, 3, [1, 0.5, None]]):
        (err,) = s.apply(op, stamp=2)
        assert isinstance(err, OpError), op
    assert sm.capture()["work_queues"] == before


@pytest.mark.parametrize("args", [[], ["w", None], ["w", 99_000], ["w", 1, 2], [5]])
def test_a_promotion_carries_only_the_work_queue_name(args: list[Any]) -> None:
    sm = StateMachine()
    s = Session(sm)
    s.apply([ops.WORK_DECLARE, "w", 30_000, 3],
            [ops.WORK_PUSH_SCHEDULED, "w", 0, 5_000, None, None, "later"], stamp=10_000)
    before = sm.capture()["work_queues"]
    (err,) = s.apply([ops.WORK_PROMOTE, *args], stamp=10_000)
    assert isinstance(err, OpError) and err.code in ("bad_args", "bad_name"), err
    assert sm.capture()["work_queues"] == before
    core = sm.work_queues["w"].core
    assert (core.pending_len(), core.delayed_len()) == (0, 1)


def test_maintenance_proposes_a_work_promotion_of_the_name_once_an_item_is_due() -> None:
    sm = StateMachine()
    Session(sm).apply([ops.WORK_DECLARE, "w", 30_000, 3],
                      [ops.WORK_PUSH_SCHEDULED, "w", 0, 100, None, None, "a"], stamp=1_000)
    view = ReadView(sm)
    assert (ops.WORK_PROMOTE, ["w"]) not in due_operations(view, 1_050, gc_topics=False)
    assert (ops.WORK_PROMOTE, ["w"]) in due_operations(view, 1_100, gc_topics=False)


def test_an_ops_time_never_runs_past_the_leaders_stamp() -> None:
    """A claim, an extension or a reap given a time later than its entry's stamp acts at
    the stamp: no delayed item early, no lease past the leader's clock, no lease reaped
    before it lapsed."""
    sm = StateMachine()
    s = Session(sm)
    s.apply([ops.WORK_DECLARE, "w", 30_000, 3],
            [ops.WORK_PUSH_SCHEDULED, "w", 0, 5_000, None, None, "later"],
            [ops.WORK_PUSH, "w", "now"], stamp=10_000)
    ((job, _),) = s.apply([ops.WORK_CLAIM, "w", "a", 10**12], stamp=10_000)
    assert (job["value"], job["deadline"]) == ("now", 40_000)  # leased from the stamp
    core = sm.work_queues["w"].core
    assert core.delayed_len() == 1  # the delayed one not due yet
    ((nothing, _),) = s.apply([ops.WORK_CLAIM, "w", "b", 10**12], stamp=10_000)
    assert nothing is None
    (extended,) = s.apply([ops.WORK_EXTEND, "w", "a", job["delivery_id"], 10**12],
                          stamp=11_000)
    assert not isinstance(extended, OpError)
    ((reaped, _),) = s.apply([ops.WORK_REAP, "w", 10**12], stamp=12_000)
    assert reaped == 0 and core.in_flight_len() == 1  # its lease runs to 41_000
    ((reaped, _),) = s.apply([ops.WORK_REAP, "w", None], stamp=41_001)
    assert reaped == 1
