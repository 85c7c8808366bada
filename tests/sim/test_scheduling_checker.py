"""The simulator's work-queue model with scheduling: it follows the state machine's
priorities, delays and promotions, fails a delivery before its due time or out of
priority order, and a simulated run with scheduling passes across faults."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from simulator.history import AppliedOp, Violation
from simulator.work_model import WorkModel

from .conftest import FIRST


class _Log:
    def __init__(self) -> None:
        self.sm = StateMachine()
        self.ops: list[AppliedOp] = []

    def __call__(self, now: int, code: int, *args: Any) -> AppliedOp:
        self.sm.now = now
        result = self.sm.apply_plain(code, list(args))
        op = AppliedOp(len(self.ops), 1, len(self.ops) + 1, code, list(args), result, now)
        self.ops.append(op)
        return op


def _replay(log: _Log) -> WorkModel:
    model = WorkModel(1_000, 3)
    for op in log.ops[1:]:
        model.apply(op, op.stamp)
    return model


def _scheduled_log() -> _Log:
    log = _Log()
    log(0, C.WORK_DECLARE, "w", 1_000, 3)
    log(0, C.WORK_PUSH, "w", "plain")
    log(0, C.WORK_PUSH_SCHEDULED, "w", 7, None, None, None, "urgent")
    log(0, C.WORK_PUSH_SCHEDULED, "w", 0, 50, None, None, "later")
    return log


def test_the_model_follows_the_state_machine() -> None:
    log = _scheduled_log()
    first = log(10, C.WORK_CLAIM, "w", "a", None).result[0]
    assert first["value"] == "urgent"
    log(20, C.WORK_NACK_DELAYED, "w", "a", first["delivery_id"], 100, None)
    log(50, C.WORK_PROMOTE, "w")
    log(60, C.WORK_CLAIM_MANY, "w", "b", 5, None)
    log(130, C.WORK_CLAIM, "w", "c", None)
    model = _replay(log)
    model.check_state(log.sm.capture()["work_queues"]["w"]["core"])
    assert model.delivered_late == 2


def test_a_delivery_before_its_due_time_fails_the_run() -> None:
    log = _scheduled_log()
    log(10, C.WORK_CLAIM, "w", "a", None)
    log(11, C.WORK_CLAIM, "w", "a", None)
    # a defective state machine handing out the delayed item early
    early = AppliedOp(9, 1, 99, C.WORK_CLAIM, ["w", "a", None],
                      [{"delivery_id": 2, "item_id": 2, "value": "later", "worker": "a",
                        "attempt": 1, "deadline": 1_012, "enqueued": 0}, 6], 12)
    log.ops.append(early)
    with pytest.raises(Violation):
        _replay(log)


def test_a_claim_out_of_priority_order_fails_the_run() -> None:
    log = _scheduled_log()
    wrong = AppliedOp(9, 1, 99, C.WORK_CLAIM, ["w", "a", None],
                      [{"delivery_id": 0, "item_id": 0, "value": "plain", "worker": "a",
                        "attempt": 1, "deadline": 1_010, "enqueued": 0}, 7], 10)
    log.ops.append(wrong)
    with pytest.raises(Violation, match="the model says item 1"):
        _replay(log)


def test_runs_with_scheduling_pass_across_faults(first_seeds: str) -> None:
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out[-2000:]
    due = re.search(r"(\d+) delayed work items delivered once due", out)
    assert due is not None and int(due.group(1)) > 0, out[-2000:]
