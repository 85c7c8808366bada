"""The simulator's model of client sessions owning ephemeral subscriptions: it passes
what the state machine does (subscribes taking ownership over, refreshes, a reap of
the stale owners, a session's end), and catches a reap that spares a stale owner's
subscriptions and a session's drop that changes anything else."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

import simulator.history
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ephemeral_owners
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE
from simulator.ephemeral_sessions import EPH_TOPIC, EphemeralSessionsModel
from simulator.history import History, RecordingStateMachine, Violation

A = CLIENT_SESSION_BASE + 11
B = CLIENT_SESSION_BASE + 22
MEMBER = 5

#: (stamp, client session or None for a member's op, code, args)
STEPS: list[tuple[int, int | None, int, list[Any]]] = [
    (1_000, A, C.TOPIC_DECLARE, [EPH_TOPIC]),
    (1_000, A, C.TOPIC_SUBSCRIBE, [EPH_TOPIC, "a-d", "durable"]),
    (1_000, A, C.TOPIC_SUBSCRIBE, [EPH_TOPIC, "a-e1", "ephemeral"]),
    (1_000, A, C.TOPIC_SUBSCRIBE_AT, [EPH_TOPIC, "a-e2", "ephemeral", "head"]),
    (1_000, B, C.TOPIC_SUBSCRIBE, [EPH_TOPIC, "b-e1", "ephemeral"]),
    (1_100, None, C.TOPIC_SUBSCRIBE, [EPH_TOPIC, "m", "ephemeral"]),
    (1_200, B, C.TOPIC_SUBSCRIBE, [EPH_TOPIC, "m", "ephemeral"]),  # B takes it over
    (1_300, None, C.TOPIC_SUBSCRIBE, [EPH_TOPIC, "a-e2", "ephemeral"]),  # now a member's
    (1_400, None, C.CLIENT_ALIVE, [[B]]),
    (1_450, None, C.EPHEMERAL_REAP, [100]),  # A is stale: a-e1 goes
    (1_500, A, C.TOPIC_PUBLISH, [EPH_TOPIC, "x"]),
    (1_600, B, C.SESSION_END, []),  # b-e1 and m go
]


def _run(history: History | None = None) -> tuple[RecordingStateMachine, History]:
    history = History() if history is None else history
    sm = RecordingStateMachine("n1", history)
    seqs: dict[int | None, count[int]] = {}
    for index, (stamp, sid, code, args) in enumerate(STEPS, start=1):
        sm.index_source = lambda index=index: index
        seq = next(seqs.setdefault(sid, count(1)))
        member_seq = next(seqs.setdefault(None, count(1))) if sid is not None else seq
        op = ([member_seq, code, *args] if sid is None
              else [member_seq, C.CLIENT_OP, sid, seq, 0, code, *args])
        sm.apply(encode_command(MEMBER, 0, [op]), stamp)
    return sm, history


def _model(history: History) -> EphemeralSessionsModel:
    model = EphemeralSessionsModel()
    now = 0
    for op in history.in_order():
        now = max(now, op.stamp)
        if model.handles(op):
            model.apply(op, now)
    return model


def test_the_model_agrees_with_the_state_machine() -> None:
    sm, history = _run()
    history.check()
    model = _model(history)
    model.check_final(sm.capture())
    assert model.subs == {"a-d": "durable", "a-e2": "ephemeral"}
    assert model.ended == {B} and model.reaps == 1 and model.removed == 3
    assert model.takeovers == 2


def test_a_reap_sparing_a_stale_owner_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ephemeral_owners.EphemeralOwners, "stale",
                        lambda self, horizon: iter(()))
    history = History()
    with pytest.raises(Violation, match=r"dropping sessions .* changed"):  # at apply
        _run(history)
    monkeypatch.setattr(simulator.history, "check_drop", lambda *args: None)
    _, history = _run()
    with pytest.raises(Violation, match="ephemeral_reap"):  # and by the model
        _model(history)


def test_a_drop_changing_anything_else_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ephemeral_owners.drop_session

    def careless(sm: Any, sid: int) -> int:
        sm.apply_plain(C.TOPIC_DISCONNECT, [EPH_TOPIC, "a-d"])
        return real(sm, sid)

    monkeypatch.setattr(ephemeral_owners, "drop_session", careless)
    history = History()
    with pytest.raises(Violation, match="changed 'topics'"):
        _run(history)
    assert history.violation is not None and "400000000000000b" in history.violation
