"""The simulator's topic options model: it passes what the state machine does, and
catches an expired element delivered, a reject topic past its limits and an uncounted
drop."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from simulator.history import AppliedOp, Violation
from simulator.topic_options import TOPICS, TopicOptionsModel

from .logged import applied


def _replayed(log: list[AppliedOp]) -> TopicOptionsModel:
    """The model after every op of ``log`` (a violation raises)."""
    model = TopicOptionsModel()
    for op in log:
        model.apply(op, op.stamp)
    return model


def _declare() -> list[tuple[int, int, list[Any]]]:
    steps: list[tuple[int, int, list[Any]]] = []
    for name, (limits, age) in sorted(TOPICS.items()):
        steps.append((0, C.TOPIC_DECLARE_LIMITED, [name, limits]))
        if age is not None:
            steps.append((0, C.EXPIRY_RULES, [name, "topic", None, age]))
        steps.append((0, C.TOPIC_SUBSCRIBE, [name, "s", "durable"]))
    return steps


STEPS = [
    *_declare(),
    (10, C.TOPIC_PUBLISH_OPTIONS, ["tr", {"ttl_ms": 5, "headers": {"k": "1"}}, "a"]),
    (10, C.TOPIC_PUBLISH, ["tr", "b"]),
    (10, C.TOPIC_PUBLISH_OPTIONS, ["tr", {"ttl_ms": 5}, "c"]),
    (11, C.TOPIC_PUBLISH, ["tr", "d"]),  # refused: reject, 3 elements
    (12, C.TOPIC_ADVANCE, ["tr", "s"]),
    (16, C.TOPIC_ADVANCE, ["tr", "s"]),  # "c" expired behind "b": "b", then nothing
    (16, C.TOPIC_ADVANCE, ["tr", "s"]),
    (16, C.TOPIC_PUBLISH, ["tr", "d"]),  # "a" expired at the head: room
    (16, C.TOPIC_GC, ["tr"]),
    (20, C.TOPIC_PUBLISH_OPTIONS, ["to", {"headers": {"k": "2"}}, "e"]),
    *[(21, C.TOPIC_PUBLISH, ["to", f"f{i}"]) for i in range(5)],  # drop_oldest: 2 drop
    (500, C.EXPIRE, ["to", "topic"]),
    (500, C.TOPIC_ADVANCE, ["to", "s"]),
]


def test_the_model_agrees_with_the_state_machine() -> None:
    sm, log = applied(STEPS)
    model = _replayed(log)
    results = [op.result for op in log if op.args[0] == "tr" and op.code == C.TOPIC_ADVANCE]
    assert results == ["a", "b", None]
    assert model.topics["to"].dropped == 2 and model.expired == 1 + 4
    model.check_final(sm.capture())


def test_the_model_catches_an_expired_element_delivered() -> None:
    _, log = applied(STEPS)
    advance = next(op for op in log if op.code == C.TOPIC_ADVANCE and op.stamp == 16
                   and op.result is None)
    advance.result = "c"  # as a take that did not skip the expired element would
    with pytest.raises(Violation, match="expired element delivered"):
        _replayed(log)


def test_the_model_catches_a_reject_topic_past_its_limits() -> None:
    _, log = applied(STEPS)
    refused = next(op for op in log if op.code == C.TOPIC_PUBLISH and op.args == ["tr", "d"])
    refused.result = 3  # as a state machine that ignored the limit would answer
    with pytest.raises(Violation, match="past its limits"):
        _replayed(log)


def test_the_model_catches_an_uncounted_drop() -> None:
    sm, log = applied(STEPS)
    model = _replayed(log)
    state = sm.capture()
    state["limits"]["topics"]["to"][1] = {"drop_oldest": 1}
    with pytest.raises(Violation, match="dropped"):
        model.check_final(state)


def test_the_model_answers_a_repeated_msg_id_from_the_window() -> None:
    steps = [*_declare(),
             (10, C.TOPIC_PUBLISH_OPTIONS, ["to", {"msg_id": "m", "ttl_ms": 5}, "a"]),
             (20, C.TOPIC_PUBLISH_OPTIONS, ["to", {"msg_id": "m", "ttl_ms": 5}, "a"]),
             (20, C.TOPIC_PUBLISH, ["to", "b"])]
    sm, log = applied(steps)
    model = _replayed(log)
    assert [op.result for op in log[-3:]] == [0, 0, 1] and model.repeats == 1
    model.check_final(sm.capture())
    log[-2].result = 1  # as a window that let the repeat apply again would answer
    with pytest.raises(Violation, match="the model says 0"):
        _replayed(log)
