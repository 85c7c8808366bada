"""The simulator's checks of a producer giving one element back twice
(:mod:`simulator.doubled_give_backs`): each copy pops once under the element's id, only
the doubling session makes a copy, its give-backs must give back, and every member's
gate must read the same records of popped elements."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE
from simulator.client import QUEUE
from simulator.doubled_give_backs import DoublingProducer, check_doubles, check_records
from simulator.history import AppliedOp, History, Violation
from simulator.queue_ids import QueueIdModel

DOUBLER = CLIENT_SESSION_BASE + 5
OTHER = CLIENT_SESSION_BASE + 6


def _op(index: int, session: int, code: int, args: list[Any], result: Any) -> AppliedOp:
    return AppliedOp(index, session, index, code, args, result, 1_000)


def _pop(model: QueueIdModel, index: int, session: int, runs: list[Any]) -> None:
    count = sum(run[1] for run in runs)
    model.pop(_op(index, session, C.QUEUE_POP_STAMPED, [QUEUE, count], [["a"] * count, runs]),
              count, 2_000, True)


def _give_back(model: QueueIdModel, index: int, session: int, value: str) -> None:
    model.unpop_stamped(_op(index, session, C.QUEUE_UNPOP_STAMPED, [], None), [value],
                        [[0, 1, 1_000]])


def test_a_doubling_session_makes_a_copy_and_each_copy_pops_and_goes_back_once() -> None:
    model = QueueIdModel([DOUBLER])
    model.push("a", 1_000)
    _pop(model, 1, DOUBLER, [[0, 1, 1_000]])
    _give_back(model, 2, DOUBLER, "a")
    _give_back(model, 3, DOUBLER, "a")  # one copy more
    assert [i for i, _ in model.tags] == [0, 0]
    _pop(model, 4, OTHER, [[0, 1, 1_000], [0, 1, 1_000]])
    _give_back(model, 5, OTHER, "a")
    _give_back(model, 6, OTHER, "a")
    with pytest.raises(Violation, match="no copy of which was handed out"):
        _give_back(model, 7, OTHER, "a")


def test_only_a_doubling_session_gives_an_element_back_under_another_value() -> None:
    model = QueueIdModel([DOUBLER])
    model.push("a", 1_000)
    _pop(model, 1, OTHER, [[0, 1, 1_000]])
    with pytest.raises(Violation, match="given back as id 0"):
        _give_back(model, 2, OTHER, "forged")
    _give_back(model, 3, DOUBLER, "forged")  # a copy more, of another value
    _pop(model, 4, OTHER, [[0, 1, 1_000]])
    _give_back(model, 5, OTHER, "forged")  # the value that copy holds


def test_without_a_doubling_session_no_id_goes_back_twice() -> None:
    model = QueueIdModel()
    model.push("a", 1_000)
    _pop(model, 1, DOUBLER, [[0, 1, 1_000]])
    _give_back(model, 2, DOUBLER, "a")
    with pytest.raises(Violation, match="no copy of which was handed out"):
        _give_back(model, 3, DOUBLER, "a")


def test_a_doublers_give_back_must_give_back_and_its_net_counts_the_copy() -> None:
    doubler = DoublingProducer("dp1", _Host(), random.Random(1))
    doubler.session = DOUBLER
    history = History()
    ops = [_op(1, DOUBLER, C.QUEUE_POP_STAMPED, [QUEUE, 1], [["a"], [[0, 1, 1_000]]]),
           _op(2, DOUBLER, C.QUEUE_UNPOP_STAMPED, [QUEUE, ["a"], [[0, 1, 1_000]]], None),
           _op(3, DOUBLER, C.QUEUE_UNPOP_STAMPED, [QUEUE, ["a"], [[0, 1, 1_000]]], None),
           _op(4, OTHER, C.QUEUE_POP_STAMPED, [QUEUE, 2],
               [["a", "a"], [[0, 1, 1_000], [0, 1, 1_000]]])]
    for op in ops:
        history.ops[op.index] = [op]
        history.results[op.session, op.seq] = op
    assert check_doubles(history, [doubler]) == {"both_in_one_pop": 1, "doubled": 1}
    assert doubler.net["a"] == -1
    failed = _op(5, DOUBLER, C.QUEUE_UNPOP_STAMPED, [QUEUE, ["a"], [[0, 1, 1_000]]],
                 OpError("apply_failed", "KeyError: 0"))
    history.ops[5], history.results[DOUBLER, 5] = [failed], failed
    with pytest.raises(Violation, match="dp1: give-back \\(seq 5\\)"):
        check_doubles(history, [doubler])


def test_every_members_gate_must_read_the_same_records() -> None:
    held = {DOUBLER: {(QUEUE, 0): (1, 1_000, b"x")}}
    check_records({"1": held, "2": dict(held)})
    with pytest.raises(Violation, match="member 2's records of popped elements"):
        check_records({"1": held, "2": {DOUBLER: {(QUEUE, 0): (1, 1_000, b"y")}}})


class _Host:
    def member_ids(self) -> list[str]:
        return ["1"]
