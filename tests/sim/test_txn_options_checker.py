"""The simulator's model of transactions pushing with options into a bounded queue: it
passes what the state machine does (a push promoting due delayed elements that fill the
queue aborts the transaction ``full``), and catches a transaction applied in part (the
check counting only the ready elements) and one aborted without cause."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from simulator.checker import Checker
from simulator.defects import without
from simulator.history import AppliedOp, History, Violation
from simulator.txn_options import CAPACITY, TXO_LOG, TXO_QUEUE

from .logged import applied


def _txn(value: str) -> list[list[Any]]:
    return [[C.QUEUE_PUSH_OPTIONS, TXO_QUEUE, {"headers": {"v": value}}, value],
            [C.QUEUE_PUSH, TXO_LOG, value]]


STEPS: list[tuple[int, int, list[Any]]] = [
    (1_000, C.QUEUE_DECLARE, [TXO_QUEUE, CAPACITY]),
    (1_000, C.QUEUE_DECLARE, [TXO_LOG, None]),
    (1_000, C.QUEUE_PUSH, [TXO_QUEUE, "ready"]),
    (1_000, C.QUEUE_PUSH_OPTIONS, [TXO_QUEUE, {"delay_ms": 50}, "d1"]),
    (1_000, C.QUEUE_PUSH_OPTIONS, [TXO_QUEUE, {"delay_ms": 60}, "d2"]),
    # One ready, two due: the push would make the queue full before it.
    (1_100, C.TXN, _txn("t1")),
    (1_100, C.QUEUE_POP_HEADERS, [TXO_QUEUE, 1]),
    (1_100, C.TXN, _txn("t2")),
]


def _replay(log: list[AppliedOp]) -> Checker:
    checker = Checker(History(), [])
    for op in log:
        checker.now = max(checker.now, op.stamp)
        checker.apply_op(op)
    return checker


def _run() -> tuple[StateMachine, list[AppliedOp]]:
    return applied(STEPS)


def test_the_model_agrees_with_the_state_machine() -> None:
    sm, log = _run()
    first, second = (op.result for op in log if op.code == C.TXN)
    assert first[0] is False and first[2] == "full"
    assert second[0] is True
    checker = _replay(log)
    checker.txn_options.check_final(sm.capture())
    model = checker.txn_options
    assert (model.due_refused, model.due_applied) == (1, 0)
    assert checker.txns.committed == 1 and checker.txns.aborted["full"] == 1


def test_a_transaction_applied_in_part_fails_the_run() -> None:
    with without("txn-counts-due-delayed"):
        _, log = _run()
    first = next(op for op in log if op.code == C.TXN)
    assert first.result[0] is True and first.result[1][0] == QueuePushError.Full
    with pytest.raises(Violation, match="applied in part"):
        _replay(log)


def test_an_abort_the_model_says_fits_fails_the_run() -> None:
    _, log = _run()
    second = [op for op in log if op.code == C.TXN][1]
    second.result = [False, 0, "full", f"queue {TXO_QUEUE!r} is full"]
    with pytest.raises(Violation, match="which the models say would apply"):
        _replay(log)
