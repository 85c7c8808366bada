"""The shape of a client's op (its member refuses a wrong one before proposing it; the
member's side is tested in ``test_client_access.py``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lazily_queue.client.access import ADMIN, CONSUME, DECLARE, PRODUCE
from lazily_queue.client.op_shapes import _AFTER_NAME, shape_problem
from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from tests.replicated.apply import apply_fresh

pytestmark = pytest.mark.timeout(60)

def test_every_op_a_client_may_propose_has_a_shape() -> None:
    proposable = (PRODUCE | CONSUME | ADMIN | DECLARE) - {ops.TXN}
    assert sorted(proposable - _AFTER_NAME.keys()) == []


@pytest.mark.parametrize(("code", "args", "problem"), [
    (ops.QUEUE_DECLARE, ["q"], "takes 2 arguments [name, value], not 1"),
    (ops.QUEUE_PUSH, ["q", 1, 2], "takes 2 arguments"),
    (ops.QUEUE_POP, [7], "the name, must be a string"),
    (ops.WORK_ACK, ["w", "worker", True], "argument 3 must be an int, not bool True"),
    (ops.WORK_ACK, ["w", 5, 1], "argument 2 must be a string, not int 5"),
    (ops.WORK_CLAIM, ["w", "worker", math.nan], "argument 3 must be a time in ms"),
    (ops.WORK_CLAIM, ["w", "worker", -1], "argument 3 must be a time in ms"),
    (ops.WORK_RELEASE, ["w", "worker", [1, {}]], "must be a list of ints, not list"),
    (ops.WORK_REDRIVE, ["w", 3], "must be a list of ints or None"),
    (ops.TOPIC_SUBSCRIBE, ["t", "s", "forever"], "must be a durability (durable or ephemeral)"),
    (ops.TOPIC_ADVANCE_TO, ["t", "s", -1], "must be a non-negative int"),
    (ops.TXN, [[ops.QUEUE_PUSH, "q", 1], [ops.WORK_PUSH_OPTIONS, "w", {}, math.inf, 1]],
     "its op 2 (work_push_options): its argument 3 must be a time in ms"),
    (ops.QUEUE_UNPOP_HEADERS, ["q", [1], [[0, 2**40, 0]], [[0, {"h": "v"}]]],
     "cover 1099511627776 ids, not one for each of the 1 values given back"),
    (ops.QUEUE_UNPOP_STAMPED, ["q", [1, 2], [[0, 1, 0]]], "cover 1 ids, not one for each"),
    (ops.QUEUE_UNPOP_STAMPED, ["q", [1], [[0, 1]]], "its argument 3: [0, 1] is not a run"),
    (ops.WORK_CLAIM_MANY, ["w", "worker", 0, None], "argument 3 must be a positive int, not int 0"),
    (ops.WORK_SETTLE_MANY, ["w", "worker", "acked", [3, 4, 3]],
     "its delivery ids (argument 4) name one delivery more than once"),
])
def test_a_wrong_shape_names_the_argument(code: int, args: list[Any], problem: str) -> None:
    found = shape_problem(code, args)
    assert found is not None and problem in found


@pytest.mark.parametrize(("code", "args"), [
    (ops.QUEUE_DECLARE, ["q", None]),
    (ops.WORK_CLAIM, ["w", "worker", None]),
    (ops.WORK_CLAIM, ["w", "worker", 12.5]),
    (ops.WORK_REDRIVE, ["w", None]),
    (ops.WORK_SETTLE_MANY, ["w", "worker", "acked", [1, 2]]),
    (ops.TOPIC_SUBSCRIBE, ["t", "s", "ephemeral"]),
    (ops.BARRIER, []),  # cluster ops and transactions are checked elsewhere
    (ops.TXN, [[ops.QUEUE_PUSH, "q", 1]]),
    (ops.QUEUE_UNPOP_HEADERS, ["q", [1, 2], [[4, 1, 0], [7, 1, 3]], [[7, {"h": "v"}]]]),
])
def test_the_right_shape_passes(code: int, args: list[Any]) -> None:
    assert shape_problem(code, args) is None



_SAMPLE: dict[str, Any] = {
    "value": None, "string": "w", "int": 1, "non-negative int": 0, "positive int": 1, "list": [],
    "list of ints": [], "list of ints or None": None, "time in ms (or None)": None}


def _prepared() -> StateMachine:
    """A queue, a topic with subscriber "w" and a work queue with a lease to "w", all "x"."""
    sm = StateMachine()
    apply_fresh(sm, [ops.QUEUE_DECLARE, "x", None], [ops.QUEUE_PUSH, "x", 1],
                [ops.TOPIC_DECLARE, "x"], [ops.TOPIC_PUBLISH, "x", 1],
                [ops.TOPIC_SUBSCRIBE, "x", "w", "durable"], [ops.WORK_DECLARE, "x", 1000, 3],
                [ops.WORK_PUSH, "x", 1], [ops.WORK_CLAIM, "x", "w", None])
    return sm


@pytest.mark.parametrize("code", sorted(_AFTER_NAME), ids=ops.op_name)
def test_each_shape_holds_as_many_arguments_as_the_state_machine_applies(code: int) -> None:
    """An op of its shape gets past the handler's unpacking (at worst a refusal of a
    value); one argument fewer does not apply."""
    name = "y" if "declare" in ops.op_name(code) else "x"
    args = [name, *(_SAMPLE.get(kind, "durable") for kind in _AFTER_NAME[code])]
    assert shape_problem(code, args) is None
    [result] = apply_fresh(_prepared(), [code, *args])
    assert not (isinstance(result, OpError) and result.code == "apply_failed"), result
    if len(args) > 1:
        [short] = apply_fresh(_prepared(), [code, *args[:-1]])
        assert isinstance(short, OpError), f"{ops.op_name(code)} applied with an argument less"


@pytest.mark.parametrize("code", sorted(_AFTER_NAME), ids=ops.op_name)
def test_a_refusal_names_a_huge_argument_by_its_first_characters(code: int) -> None:
    """A refusal is kept in the client's session on every member: it must not carry a
    huge argument back whole."""
    kinds = _AFTER_NAME[code]
    for position, kind in enumerate(kinds, start=1):
        if kind not in ("value", "string"):
            continue
        args: list[Any] = ["x", *(_SAMPLE.get(k, "durable") for k in kinds)]
        args[position] = "B" * 100_000
        [result] = apply_fresh(_prepared(), [code, *args])
        if isinstance(result, OpError):
            assert len(result.message) < 1_000, (ops.op_name(code), position, result.code)


_EXTREMES: list[Any] = [
    None, True, 0, -1, 2**63, -(2**200), 0.5, math.inf, math.nan, "", "w", "durable", "acked",
    "head", [], [-1], [2**64], [[0, 1, 0]], [[0, 2**40, 0]], [None], {}, {"priority": 10**9},
    {"delay": 2**70}, {"ttl": -1}, {"max_length": 2**70}, b"x", [1, 2**70, 0.5], [None] * 3]


@pytest.mark.parametrize("code", sorted(_AFTER_NAME), ids=ops.op_name)
def test_an_op_of_its_shape_never_fails_where_it_applies(code: int) -> None:
    """What passes the shape check is applied or refused by the state machine, never
    failed with an exception (each replica would log its traceback)."""
    kinds = _AFTER_NAME[code]
    for position in range(1, len(kinds) + 1):
        for extreme in _EXTREMES:
            args: list[Any] = ["x", *(_SAMPLE.get(k, "durable") for k in kinds)]
            args[position] = extreme
            if shape_problem(code, args) is not None:
                continue
            [result] = apply_fresh(_prepared(), [code, *args])
            assert not (isinstance(result, OpError) and result.code == "apply_failed"), (
                ops.op_name(code), position, extreme, result)
