"""The simulator's checks of registered sessions: with few client sessions kept, a late
retry under a session given up for the bound is refused and the model passes; were it
applied again (a state machine opening the forgotten session), the history and the
model catch it."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops as C
from lazily_queue.replicated import session_register
from lazily_queue.replicated.session_register import UNKNOWN
from simulator.checker import Checker
from simulator.client import FAILED, Observed
from simulator.history import History, RecordingStateMachine, Violation
from simulator.registered_sessions import REG_QUEUE, REG_TAG, RegisteredSessionsModel

MEMBER = 5


@dataclass
class _Client:
    cid: str
    ops: list[Observed] = field(default_factory=list)


class _Run:
    """One replica applying a member's proposals, one entry each."""

    def __init__(self, bound: int) -> None:
        self.history = History()
        self.history.max_client_sessions = bound
        self.sm = RecordingStateMachine("n1", self.history)
        self.index = count(1)
        self.seq = count(1)

    def member(self, code: int, *args: Any) -> Any:
        index = next(self.index)
        self.sm.index_source = lambda: index
        result = self.sm.apply(encode_command(MEMBER, 0, [[next(self.seq), code, *args]]),
                               1_000 + index)
        assert isinstance(result, list)
        return result[0]

    def client(self, sid: int, seq: int, code: int, *args: Any) -> Any:
        return self.member(C.CLIENT_OP, sid, seq, seq, code, *args)

    def model(self) -> RegisteredSessionsModel:
        model = RegisteredSessionsModel()
        seen: set[tuple[int, int]] = set()
        for op in self.history.in_order():
            if (op.session, op.seq) in seen:
                model.retried(op)
                continue
            seen.add((op.session, op.seq))
            if model.handles(op):
                model.apply(op)
        model.check_final(self.sm.capture())
        return model


def _late_retry(run: _Run) -> Any:
    first = run.member(C.SESSION_REGISTER, REG_TAG)
    assert run.client(first, 1, C.QUEUE_DECLARE, REG_QUEUE, None) is None
    assert run.client(first, 2, C.QUEUE_PUSH, REG_QUEUE, "v") is None
    for _ in range(2):  # the same clients register more: the first is given up
        run.member(C.SESSION_REGISTER, REG_TAG)
    return run.client(first, 2, C.QUEUE_PUSH, REG_QUEUE, "v")  # a late retry


def test_a_late_retry_under_a_session_given_up_is_refused_and_the_model_passes() -> None:
    run = _Run(bound=2)
    assert _late_retry(run) == UNKNOWN
    model = run.model()
    assert model.values == ["v"] and model.refused == 1 and model.registered == 3


def test_a_late_retry_applied_again_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_register, "registered", lambda sid: False)
    run = _Run(bound=2)
    with pytest.raises(Violation, match="applied twice"):
        _late_retry(run)
    with pytest.raises(Violation, match="holds"):
        run.model()


def _refused_new_op(run: _Run) -> tuple[int, Any]:
    """A client's first session is given up for the bound before its next push goes:
    the push (seq 3) is refused under the forgotten session."""
    first = run.member(C.SESSION_REGISTER, REG_TAG)
    assert run.client(first, 1, C.QUEUE_DECLARE, REG_QUEUE, None) is None
    assert run.client(first, 2, C.QUEUE_PUSH, REG_QUEUE, "v") is None
    for _ in range(2):
        run.member(C.SESSION_REGISTER, REG_TAG)
    return first, run.client(first, 3, C.QUEUE_PUSH, REG_QUEUE, "w")


def test_an_op_refused_under_a_forgotten_session_is_fenced_off_the_replay() -> None:
    run = _Run(bound=2)
    first, answer = _refused_new_op(run)
    assert answer == UNKNOWN
    assert (first, 3) in run.history.fenced and (first, 3) not in run.history.results
    told = Observed("rs1", "n1", first, 3, C.QUEUE_PUSH, [REG_QUEUE, "w"], 0.0,
                    outcome=FAILED, result=UNKNOWN)  # the client sends it again
    checker = Checker(run.history, [_Client("rs1", [told])])
    checker.replay()
    checker.check_clients()
    checker.check_final(run.sm.capture())
    assert checker.registered.values == ["v"] and checker.registered.refused == 1


class _RunsRefused(RecordingStateMachine):
    """A state machine that answers an op under a forgotten session ``session_unknown``
    but applies it all the same, in a session it opens anew."""

    def _apply_in_session(self, sid: int, floor: int, ops: list[list[Any]]) -> list[Any]:
        if not session_register.registered(sid) or sid in self.sessions:
            return super()._apply_in_session(sid, floor, ops)
        original = session_register.registered
        session_register.registered = lambda sid: False
        try:
            super()._apply_in_session(sid, floor, ops)
        finally:
            session_register.registered = original
        return [UNKNOWN for _ in ops]


def test_an_op_answered_refused_that_ran_is_caught() -> None:
    run = _Run(bound=2)
    run.sm = _RunsRefused("n1", run.history)
    with pytest.raises(Violation, match="ran at index 6 though it was answered as refused"):
        _refused_new_op(run)


def test_an_op_told_not_applied_that_the_log_applied_is_caught() -> None:
    run = _Run(bound=2)
    first = run.member(C.SESSION_REGISTER, REG_TAG)
    assert run.client(first, 1, C.QUEUE_DECLARE, REG_QUEUE, None) is None
    assert run.client(first, 2, C.QUEUE_PUSH, REG_QUEUE, "v") is None
    told = Observed("rs1", "n1", first, 2, C.QUEUE_PUSH, [REG_QUEUE, "v"], 0.0,
                    outcome=FAILED, result=UNKNOWN)
    checker = Checker(run.history, [_Client("rs1", [told])])
    checker.replay()
    with pytest.raises(Violation, match="reported as not applied was applied at index 3"):
        checker.check_clients()
