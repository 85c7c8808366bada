"""The simulator's checks of registered sessions: with few client sessions kept, a late
retry under a session given up for the bound is refused and the model passes; were it
applied again (a state machine opening the forgotten session), the history and the
model catch it."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops as C
from lazily_queue.replicated import session_register
from lazily_queue.replicated.session_register import UNKNOWN
from simulator.history import History, RecordingStateMachine, Violation
from simulator.registered_sessions import REG_QUEUE, REG_TAG, RegisteredSessionsModel

MEMBER = 5


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
