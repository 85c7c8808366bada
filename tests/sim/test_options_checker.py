"""The simulator's queue-options model: it passes what the state machine does (options
combined, delayed elements, retries, expiry, promotions), and catches an element popped
before its due time, a repeated msg_id applied twice and lost headers."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from simulator.history import AppliedOp, Violation
from simulator.queue_options import OPTIONS_QUEUE, OptionsModel

from .logged import applied

Q = OPTIONS_QUEUE
STEPS: list[tuple[int, int, list[Any]]] = [
    (1_000, C.QUEUE_DECLARE, [Q, None]),
    (1_000, C.QUEUE_PUSH_OPTIONS, [Q, {"delay_ms": 300, "headers": {"n": "1"}}, "late"]),
    (1_000, C.QUEUE_PUSH_OPTIONS, [Q, {"msg_id": "m", "ttl_ms": 50, "delay_ms": 100}, "gone"]),
    (1_010, C.QUEUE_PUSH_OPTIONS, [Q, {"msg_id": "m", "delay_ms": 0}, "repeat"]),
    (1_010, C.QUEUE_PUSH, [Q, "plain"]),
    (1_020, C.QUEUE_PUSH_OPTIONS, [Q, {"not_before_ms": 1_100, "ttl_ms": 5_000}, "early"]),
    (1_050, C.QUEUE_POP_HEADERS, [Q, 4]),
    (1_200, C.QUEUE_PROMOTE, [Q]),
    (1_200, C.QUEUE_POP_HEADERS, [Q, 4]),
    (1_300, C.EXPIRE, [Q, "queue"]),
    (1_300, C.QUEUE_POP_HEADERS, [Q, 4]),
    (1_300, C.QUEUE_PUSH_OPTIONS, [Q, {"delay_ms": 900}, "pending"]),
]


def _log() -> tuple[StateMachine, list[AppliedOp]]:
    return applied(STEPS)


def _replay(log: list[AppliedOp]) -> OptionsModel:
    model = OptionsModel()
    for op in log:
        model.apply(op, op.stamp)
    return model


def test_the_model_agrees_with_the_state_machine() -> None:
    sm, log = _log()
    pops = [op.result for op in log if op.code == C.QUEUE_POP_HEADERS]
    assert [p[0] for p in pops] == [["plain"], ["early"], ["late"]]  # "gone" expired
    model = _replay(log)
    model.check_final(sm.capture())
    assert (model.expired, model.repeats, model.delivered_delayed) == (1, 1, 2)


def test_the_model_catches_an_early_pop_a_double_apply_and_lost_headers() -> None:
    _, log = _log()
    early = next(op for op in log if op.code == C.QUEUE_POP_HEADERS)
    early.result = [["plain", "gone"], early.result[1], []]  # "gone" was not due
    with pytest.raises(Violation, match="before its due time"):
        _replay(log)
    sm, log = _log()
    repeat = next(op for op in log if op.args[-1] == "repeat")
    repeat.args = [Q, {"msg_id": "other"}, "repeat"]  # a new id: it would apply
    with pytest.raises(Violation, match=r"delivered other elements|returned"):
        _replay(log)
    sm, log = _log()
    late = [op for op in log if op.code == C.QUEUE_POP_HEADERS][2]
    late.result = [late.result[0], late.result[1], []]
    with pytest.raises(Violation, match="headers"):
        _replay(log)
    sm, log = _log()
    state = sm.capture()
    state["queue_options"][Q] = []
    with pytest.raises(Violation, match="delayed"):
        _replay(log).check_final(state)
