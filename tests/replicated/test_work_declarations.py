"""Every work-queue declaration compares the whole configuration (settings, retry
policy, limits): a mismatch is refused on every member alike, nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import Limits, RetryPolicy, testing
from lazily_queue.core.limited_work import LimitedWorkQueue
from lazily_queue.raft.errors import ProposalRejected
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

RETRY = [100, 2, 1000]
LIMITS = [2, None, "reject"]
#: One declaration of "w" per configuration, each by every op that can express it.
DECLARATIONS: dict[str, list[tuple[int, list[Any]]]] = {
    "plain": [(C.WORK_DECLARE, ["w", 1000, 3]),
              (C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {}])],
    "retry": [(C.WORK_DECLARE_RETRY, ["w", 1000, 3, RETRY]),
              (C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {"retry": RETRY}])],
    "limits": [(C.WORK_DECLARE_LIMITED, ["w", 1000, 3, LIMITS]),
               (C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {"limits": LIMITS}])],
    "both": [(C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {"retry": RETRY, "limits": LIMITS}])],
    "other lease": [(C.WORK_DECLARE_OPTIONS, ["w", 2000, 3, {"retry": RETRY,
                                                             "limits": LIMITS}])],
}
CASES = [(first, second, op)
         for first in DECLARATIONS for second in DECLARATIONS
         for op in DECLARATIONS[second]]


@pytest.mark.parametrize(("first", "second", "op"), CASES)
def test_a_declaration_is_accepted_only_with_the_same_configuration(
        first: str, second: str, op: tuple[int, list[Any]]) -> None:
    members = [StateMachine(), StateMachine()]
    code, args = DECLARATIONS[first][0]
    answers = []
    for sm in members:
        assert sm.apply_plain(code, list(args)) is None
        before = sm.capture()
        answers.append(sm.apply_plain(op[0], list(op[1])))
        if first != second:  # refused: nothing changed
            assert sm.capture() == before
    if first == second:
        assert answers == [None, None]
    else:
        assert all(isinstance(a, OpError) and a.code == "config_mismatch" for a in answers)
        assert str(answers[0]) == str(answers[1])
    core = members[0].work_queues["w"].core
    assert (core.retry is not None) == (first in ("retry", "both", "other lease"))
    assert isinstance(core, LimitedWorkQueue) == (first in ("limits", "both", "other lease"))


def test_a_malformed_declaration_is_refused_whole() -> None:
    sm = StateMachine()
    for code, args in ((C.WORK_DECLARE, ["w", 1000]),
                       (C.WORK_DECLARE_RETRY, ["w", 1000, 3]),
                       (C.WORK_DECLARE_LIMITED, ["w", 1000, 3, LIMITS, 1]),
                       (C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {"ttl": 5}])):
        refused = sm.apply_plain(code, args)
        assert isinstance(refused, OpError) and refused.code in ("bad_args", "bad_config")
    assert sm.work_queues == {}


async def test_nodes_opening_a_work_queue_differently_are_refused() -> None:
    async with testing.cluster(2) as c:
        first, second = c.running[0], c.running[1]
        w = first.work_queue("w", visibility_timeout=30, retry=RetryPolicy.fixed(1))
        await w.push("a")
        other = second.work_queue("w", visibility_timeout=30,
                                  limits=Limits(max_length=2))
        with pytest.raises(ProposalRejected, match="config_mismatch"):
            await other.push("b")
        plain = second.work_queue("v", visibility_timeout=30)
        await plain.push("x")
        retried = first.work_queue("v", visibility_timeout=30, retry=RetryPolicy.fixed(1))
        with pytest.raises(ProposalRejected, match="config_mismatch"):
            await retried.push("y")
        assert w.pending_len() == 1 and plain.pending_len() == 1
