"""The simulator's limits model: it passes what the state machine does, and catches a
reject queue past its limits, an uncounted drop and an acknowledged push lost outside
the policy."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from simulator.history import AppliedOp, Violation
from simulator.limits_model import LIMITED, LimitsModel


def _run(pushes: dict[str, list[str]]) -> tuple[StateMachine, LimitsModel, list[AppliedOp]]:
    sm = StateMachine()
    log: list[AppliedOp] = []

    def apply(code: int, *args: Any) -> None:
        result = sm.apply_plain(code, list(args))
        log.append(AppliedOp(len(log), 1, len(log) + 1, code, list(args), result, 0))

    for name in sorted(LIMITED):
        apply(C.QUEUE_DECLARE_LIMITED, name, LIMITED[name])
    for name, values in pushes.items():
        for value in values:
            apply(C.QUEUE_PUSH, name, value)
        apply(C.QUEUE_POP_STAMPED, name, 1)
    model = LimitsModel()
    for op in log:
        model.apply(op)
    return sm, model, log


PUSHES = {"lr": ["a" * 20, "b" * 20, "c" * 20, "d" * 20, "e"],
          "ld": ["f" * 15, "g" * 15, "h" * 15, "i", "j", "k"]}


def test_the_model_agrees_with_the_state_machine() -> None:
    sm, model, log = _run(PUSHES)
    assert [op.result for op in log if op.code == C.QUEUE_PUSH and op.args[0] == "lr"] == [
        None, None, None, QueuePushError.Full, None]
    state = sm.capture()
    model.check_final(state)
    model.check_acknowledged([("ld", "f" * 15), ("ld", "k"), ("lr", "e")])
    assert state["limits"]["queues"]["ld"][1] == {"drop_oldest": 3}


def test_the_model_catches_an_uncounted_drop_and_a_lost_push() -> None:
    sm, model, _ = _run(PUSHES)
    state = sm.capture()
    state["limits"]["queues"]["ld"][1] = {"drop_oldest": 2}
    with pytest.raises(Violation, match="dropped"):
        model.check_final(state)
    with pytest.raises(Violation, match="lost outside the overflow policy"):
        model.check_acknowledged([("ld", "never-pushed")])


def test_the_model_catches_a_reject_queue_past_its_limits() -> None:
    *_, log = _run(PUSHES)
    fourth = next(op for op in log if op.code == C.QUEUE_PUSH and op.args[1] == "d" * 20)
    fourth.result = None  # as if the replicas had accepted it
    with pytest.raises(Violation, match="the model says"):
        _replay(log)


def _replay(log: list[AppliedOp]) -> None:
    model = LimitsModel()
    for op in log:
        model.apply(op)
