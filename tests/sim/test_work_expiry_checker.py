"""The simulator's model of work items with a TTL: it follows the state machine, fails a
claim that hands out an expired item and an expired item left uncounted, and a few
simulated seeds (faults included) pass with items expiring and claimed live."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from simulator.history import AppliedOp, Violation
from simulator.work_expiry import MAX_DELIVERIES, VISIBILITY_MS, WORK_TTL, WorkExpiryModel

from .conftest import FIRST
from .logged import applied

W = WORK_TTL


def _replay(log: list[AppliedOp]) -> WorkExpiryModel:
    model = WorkExpiryModel()
    for op in log:
        model.apply(op, op.stamp)
    return model


STEPS: list[tuple[int, int, list[Any]]] = [
    (0, C.WORK_DECLARE, [W, VISIBILITY_MS, MAX_DELIVERIES]),
    (0, C.WORK_PUSH_TTL, [W, 10, "a"]),                        # expires at 10
    (0, C.WORK_PUSH, [W, "b"]),                                # never expires
    (0, C.WORK_PUSH_OPTIONS, [W, {"ttl_ms": 20}, None, "c"]),  # expires at 20
    (0, C.WORK_PUSH_OPTIONS, [W, {"ttl_ms": 30, "delay_ms": 50}, None, "d"]),  # due after
    (0, C.WORK_PUSH_OPTIONS, [W, {"ttl_ms": 500, "priority": 2}, None, "e"]),
    (5, C.WORK_CLAIM, [W, "x", None]),                          # "e": its level first
    (12, C.WORK_CLAIM, [W, "x", None]),                         # "a" expired: "b"
    (15, C.WORK_NACK, [W, "x", 1]),                             # "b" back at the tail
    (25, C.EXPIRE, [W, "work_queue"]),                          # "c" expired at the head
    (60, C.WORK_CLAIM_MANY, [W, "y", 3, None]),                 # "d" due and expired: "b"
    (61, C.WORK_PUSH_TTL, [W, 5, "f"]),
    (70, C.WORK_CLAIM, [W, "y", None]),                         # "f" expired: nothing
]


def test_the_model_follows_the_state_machine() -> None:
    sm, log = applied(STEPS)
    claimed = [op.result[0] for op in log if op.code in (C.WORK_CLAIM, C.WORK_CLAIM_MANY)]
    assert [claimed[0]["value"], claimed[1]["value"], [d["value"] for d in claimed[2]],
            claimed[3]] == ["e", "b", ["b"], None]
    model = _replay(log)
    assert model.expired == [0, 2, 3, 5] and model.delivered == 1
    model.check_final(sm.capture())


def test_a_claim_handing_out_an_expired_item_fails_theapplied() -> None:
    _, log = applied(STEPS)
    claim = log[7]
    assert claim.result[0]["value"] == "b"
    claim.result = [{**claim.result[0], "item_id": 0, "value": "a"}, claim.result[1]]
    with pytest.raises(Violation, match=r"handed out item 0 .* expired at 10"):
        _replay(log)


def test_an_expired_item_must_be_counted() -> None:
    sm, log = applied(STEPS)
    model = _replay(log)
    state = sm.capture()
    state["expiry"]["work_queue"][W][2] -= 1
    with pytest.raises(Violation, match="counted 3 expired items, the model 4"):
        model.check_final(state)


def test_an_item_lost_silently_fails_theapplied() -> None:
    sm, log = applied(STEPS)
    model = _replay(log)
    model.expired.pop()
    with pytest.raises(Violation):
        model.check_final(sm.capture())


def test_a_few_seeds_pass_with_work_items_expiring(first_seeds: str) -> None:
    """Work items and a consumer group's elements expire and are claimed live."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out[-2000:]
    counts = re.search(r"(\d+) TTL work items expired unclaimed \((\d+) claimed live\), "
                       r"(\d+) group elements expired unclaimed \((\d+) with a deadline", out)
    assert counts is not None and all(int(n) > 0 for n in counts.groups()), out[-2000:]
