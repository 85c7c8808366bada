"""The simulator's consumer-group model: it catches two members holding one element,
an element a group never got, and passes what the state machine does."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from simulator.group_model import GroupModels
from simulator.history import AppliedOp, Violation

from .conftest import FIRST


class _Log:
    """Applies ops to a real state machine and records them as the history would."""

    def __init__(self) -> None:
        self.sm = StateMachine()
        self.ops: list[AppliedOp] = []

    def __call__(self, code: int, *args: Any) -> AppliedOp:
        result = self.sm.apply_plain(code, list(args))
        op = AppliedOp(len(self.ops), 1, len(self.ops) + 1, code, list(args), result, 0)
        self.ops.append(op)
        return op


def _replay(log: _Log) -> GroupModels:
    models = GroupModels()
    published: list[Any] = []
    for op in log.ops:
        if op.code == C.GROUP_DECLARE:
            models.declare(op, 0, published)
        elif op.code == C.TOPIC_PUBLISH:
            models.feed(len(published), op.args[1], op.stamp)
            published.append(op.args[1])
        elif op.code != C.TOPIC_DECLARE:
            models.apply(op, 0)
    return models


def test_the_model_follows_the_state_machine() -> None:
    log = _Log()
    log(C.TOPIC_DECLARE, "t")
    log(C.TOPIC_PUBLISH, "t", "a")
    log(C.GROUP_DECLARE, "t", "g", 100, 2, "head")
    log(C.TOPIC_PUBLISH, "t", "b")
    first = log(C.WORK_CLAIM, "t:g", "m1", None).result[0]
    second = log(C.WORK_CLAIM, "t:g", "m2", None).result[0]
    log(C.WORK_ACK, "t:g", "m1", first["delivery_id"])
    log(C.WORK_ACK, "t:g", "m2", second["delivery_id"])
    models = _replay(log)
    models.check_drained(2)
    models.check_state(log.sm.capture()["work_queues"])
    assert models.settled() == 2


def test_two_members_holding_one_element_fail_the_run() -> None:
    log = _Log()
    log(C.GROUP_DECLARE, "t", "g", 100, 2, "tail")
    log(C.TOPIC_PUBLISH, "t", "a")
    claim = log(C.WORK_CLAIM, "t:g", "m1", None)
    # a defective state machine leasing the element again to another member
    doubled = AppliedOp(9, 1, 99, C.WORK_CLAIM, ["t:g", "m2", None],
                        [{**claim.result[0], "delivery_id": 1, "worker": "m2"}, 0], 0)
    log.ops.append(doubled)
    with pytest.raises(Violation, match="the model says"):
        _replay(log)


def test_an_element_a_group_never_settled_fails_the_drain() -> None:
    log = _Log()
    log(C.GROUP_DECLARE, "t", "g", 100, 2, "tail")
    log(C.TOPIC_PUBLISH, "t", "a")
    models = _replay(log)
    models.models["t:g"].pending.clear()  # as if the feed had been lost
    with pytest.raises(Violation, match="settled 0 elements"):
        models.check_drained(1)


def test_group_members_share_each_element_across_faults(first_seeds: str) -> None:
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    assert "elements settled by consumer groups" in out
    settled = int(out.split(" elements settled by consumer groups")[0].rsplit(" ", 1)[1])
    assert settled > 0, out


def _expiring_group_log() -> list[AppliedOp]:
    """A group of a topic with a 400 ms age limit, as the state machine applies it."""
    from simulator.group_expiry import AGE_MS, GROUP, GROUP_QUEUE, GROUP_TOPIC
    from simulator.work_expiry import MAX_DELIVERIES, VISIBILITY_MS

    sm = StateMachine()
    log: list[AppliedOp] = []
    t, q = GROUP_TOPIC, GROUP_QUEUE
    for stamp, code, args in [
        (0, C.TOPIC_DECLARE, [t]), (0, C.EXPIRY_RULES, [t, "topic", None, AGE_MS]),
        (0, C.TOPIC_PUBLISH, [t, "before"]),  # not the group's: it starts at the tail
        (0, C.GROUP_DECLARE, [t, GROUP, VISIBILITY_MS, MAX_DELIVERIES, "tail"]),
        (10, C.TOPIC_PUBLISH_OPTIONS, [t, {"ttl_ms": 10}, "short"]),   # deadline 20
        (10, C.TOPIC_PUBLISH, [t, "plain"]),                          # 410
        (10, C.TOPIC_PUBLISH_OPTIONS, [t, {"ttl_ms": 5_000}, "long"]),  # 410: the age wins
        (30, C.WORK_CLAIM, [q, "m", None]),                           # "short" expired
        (40, C.WORK_ACK, [q, "m", 0]),
        (500, C.EXPIRE, [t, "topic"]),                                # the topic's own log
        (500, C.WORK_CLAIM_MANY, [q, "m", 3, None]),                  # "long" expired too
    ]:
        sm.now = max(sm.now, stamp)
        result = sm.apply_plain(code, list(args))
        log.append(AppliedOp(len(log), 1, len(log) + 1, code, list(args), result, stamp))
    return log


def _expiring_model() -> Any:
    from simulator.group_expiry import AGE_MS, GROUP, GROUP_TOPIC
    from simulator.group_model import ExpiringGroupModel
    from simulator.work_expiry import MAX_DELIVERIES, VISIBILITY_MS

    return ExpiringGroupModel(GROUP_TOPIC, GROUP, AGE_MS, VISIBILITY_MS, MAX_DELIVERIES)


def test_the_expiring_group_model_follows_the_state_machine() -> None:
    log = _expiring_group_log()
    model = _expiring_model()
    for op in log:
        model.apply(op, op.stamp)
    assert model.expired == [1, 3] and model.delivered == 1 and model.acked == {2}
    assert log[-1].result[0] == []
    sm = StateMachine()
    for op in log:  # the final state: replay the same ops
        sm.now = max(sm.now, op.stamp)
        sm.apply_plain(op.code, list(op.args))
    model.check_final(sm.capture())


def test_the_expiring_group_model_catches_an_expired_element_delivered() -> None:
    log = _expiring_group_log()
    claim = log[7]
    assert claim.result[0]["value"] == "plain"
    claim.result = [{**claim.result[0], "item_id": 1, "value": "short"}, claim.result[1]]
    model = _expiring_model()
    with pytest.raises(Violation, match="handed out item 1 of t-ttl:g, expired at 20"):
        for op in log:
            model.apply(op, op.stamp)
