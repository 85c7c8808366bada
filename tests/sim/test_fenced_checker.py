"""The simulator's checks of a stale attempt fenced off by its session's floor: a
proposer gives an op up (its outcome unknown) and numbers on, so an attempt of it that
commits later is answered "duplicate" and never applied. The checker counts it as not
applied; a client told it succeeded is a lost op and fails the check."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE
from simulator.checker import Checker
from simulator.client import FAILED, OK, QUEUE, UNKNOWN, Observed
from simulator.history import History, RecordingStateMachine, Violation

MEMBER = 5
CLIENT = CLIENT_SESSION_BASE + 7


@dataclass
class _Client:
    cid: str
    ops: list[Observed] = field(default_factory=list)


class _Run:
    """One replica applying batches, one entry each."""

    def __init__(self) -> None:
        self.history = History()
        self.sm = RecordingStateMachine("n1", self.history)
        self.index = count(1)

    def batch(self, seq: int, floor: int, code: int, *args: Any) -> Any:
        index = next(self.index)
        self.sm.index_source = lambda: index
        result = self.sm.apply(encode_command(MEMBER, floor, [[seq, code, *args]]),
                               1_000 + index)
        assert isinstance(result, list)
        return result[0]


def _member_gave_up(run: _Run) -> tuple[int, int]:
    """The member gives up its seq 2 and numbers on; the stale attempt commits last."""
    assert run.batch(1, 1, C.QUEUE_DECLARE, QUEUE, None) is None
    assert run.batch(3, 3, C.QUEUE_PUSH, QUEUE, "a") is None
    assert run.batch(2, 1, C.QUEUE_PUSH, QUEUE, "b") == OpError("duplicate", "already applied")
    return MEMBER, 2


def _client_gave_up(run: _Run) -> tuple[int, int]:
    """A client session gives up its seq 2 (a give-back its new link refused) and numbers
    on; the stale attempt, through another member, commits last."""
    assert run.batch(1, 1, C.QUEUE_DECLARE, QUEUE, None) is None
    assert run.batch(2, 2, C.CLIENT_OP, CLIENT, 3, 3, C.QUEUE_PUSH, QUEUE, "a") is None
    assert run.batch(3, 2, C.CLIENT_OP, CLIENT, 2, 2, C.QUEUE_PUSH, QUEUE, "b") == OpError(
        "duplicate", "already applied")
    return CLIENT, 2


def _checker(run: _Run, key: tuple[int, int], outcome: str, result: Any) -> Checker:
    obs = Observed("c1", "n1", key[0], key[1], C.QUEUE_PUSH, [QUEUE, "b"], 0.0,
                   outcome=outcome, result=result)
    return Checker(run.history, [_Client("c1", [obs])])


@pytest.mark.parametrize("gave_up", [_member_gave_up, _client_gave_up])
def test_a_fenced_attempt_counts_as_not_applied(gave_up: Any) -> None:
    run = _Run()
    key = gave_up(run)
    assert key in run.history.fenced and key not in run.history.results
    checker = _checker(run, key, UNKNOWN, "StorageUnavailable")
    checker.replay()
    checker.check_clients()
    checker.check_final(run.sm.capture())
    assert checker.pushed == ["a"]


@pytest.mark.parametrize("gave_up", [_member_gave_up, _client_gave_up])
def test_an_acknowledged_op_only_fenced_is_lost(gave_up: Any) -> None:
    run = _Run()
    key = gave_up(run)
    checker = _checker(run, key, OK, OpError("duplicate", "already applied"))
    checker.replay()
    with pytest.raises(Violation, match="was never applied: its first appearance, at index 3"):
        checker.check_clients()


def test_a_retry_after_the_application_is_not_fenced() -> None:
    run = _Run()
    assert run.batch(1, 1, C.QUEUE_DECLARE, QUEUE, None) is None
    assert run.batch(2, 2, C.CLIENT_OP, CLIENT, 1, 1, C.QUEUE_PUSH, QUEUE, "b") is None
    assert run.batch(3, 3, C.CLIENT_OP, CLIENT, 1, 2, C.QUEUE_PUSH, QUEUE, "b") is None
    assert not run.history.fenced and run.history.results[CLIENT, 1].index == 2
    checker = _checker(run, (CLIENT, 1), OK, None)
    checker.replay()
    checker.check_clients()
    assert checker.deduplicated == 1


def test_an_op_refused_under_an_ended_session_is_fenced_off_the_replay() -> None:
    """A client ends its session; a push of it sent before the end (through a slow
    member) commits after it and is refused ``session_ended``: never applied, so no
    model replays it, and a client told it was not applied is right."""
    run = _Run()
    assert run.batch(1, 1, C.QUEUE_DECLARE, QUEUE, None) is None
    assert run.batch(2, 2, C.CLIENT_OP, CLIENT, 1, 1, C.QUEUE_PUSH, QUEUE, "a") is None
    assert run.batch(3, 3, C.CLIENT_OP, CLIENT, 3, 3, C.SESSION_END) is None
    refused = run.batch(4, 4, C.CLIENT_OP, CLIENT, 2, 2, C.QUEUE_PUSH, QUEUE, "b")
    assert isinstance(refused, OpError) and refused.code == "session_ended"
    assert (CLIENT, 2) in run.history.fenced and (CLIENT, 2) not in run.history.results
    checker = _checker(run, (CLIENT, 2), FAILED, refused)
    checker.replay()
    checker.check_clients()
    checker.check_final(run.sm.capture())
    assert checker.pushed == ["a"]
