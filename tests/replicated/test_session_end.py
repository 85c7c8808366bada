"""``SESSION_END``: a client closing cleanly drops its session, the results it keeps and
the ephemeral subscriptions it owns; a later op under the ended id is refused, never
applied in a fresh session."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.errors import ProposalRejected, ResultNotKept
from lazily_queue.replicated import ops, session_end
from lazily_queue.replicated.state_machine import (
    CLIENT_SESSION_BASE,
    SESSION_TTL_MS,
    StateMachine,
)
from lazily_queue.storage.replicated_object import raise_op_error

A = CLIENT_SESSION_BASE + 11
B = CLIENT_SESSION_BASE + 22
_members = count(1)


def _apply(sm: StateMachine, *op_list: list[Any], stamp: int) -> list[Any]:
    result = sm.apply(encode_command(next(_members), 0,
                                     [[i + 1, *op] for i, op in enumerate(op_list)]), stamp)
    assert isinstance(result, list)
    return result


def _client(sm: StateMachine, session: int, seq: int, code: int, *args: Any,
            stamp: int = 1_000) -> Any:
    return _apply(sm, [ops.CLIENT_OP, session, seq, 0, code, *args], stamp=stamp)[0]


def _two_clients() -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.TOPIC_DECLARE, "t"], stamp=1_000)
    for value in range(4):
        _client(sm, A, value + 1, ops.QUEUE_PUSH, "q", value)
    _client(sm, A, 5, ops.QUEUE_POP_MANY, "q", 2)
    _client(sm, A, 6, ops.TOPIC_SUBSCRIBE, "t", "a", "ephemeral")
    _client(sm, A, 7, ops.TOPIC_SUBSCRIBE, "t", "a-durable", "durable")
    _client(sm, B, 1, ops.TOPIC_SUBSCRIBE, "t", "b", "ephemeral")
    _client(sm, B, 2, ops.QUEUE_POP_MANY, "q", 1)
    return sm


def test_an_ended_session_is_dropped_with_its_results_and_ephemeral_subscriptions() -> None:
    sm = _two_clients()
    kept_by_a = sm.sessions[A].kept_bytes
    total = sm.kept.total
    assert kept_by_a > 0
    assert _client(sm, A, 8, ops.SESSION_END, stamp=2_000) is None
    assert A not in sm.sessions and B in sm.sessions
    assert sm.kept.total == total - kept_by_a
    assert set(sm.topics["t"].subscriptions()) == {"a-durable", "b"}
    assert sm.ephemeral_owners.owner == {("t", "b"): B}
    assert A in sm.ended


def test_an_op_under_an_ended_session_is_refused_and_not_applied_again() -> None:
    sm = _two_clients()
    _client(sm, A, 8, ops.SESSION_END, stamp=2_000)
    left = sm.queues["q"].elements()
    # A retry of the pop applied before the end (still in flight through another member).
    assert _client(sm, A, 5, ops.QUEUE_POP_MANY, "q", 2, stamp=3_000) == session_end.ENDED
    assert _client(sm, A, 9, ops.QUEUE_PUSH, "q", "late", stamp=3_000) == session_end.ENDED
    assert sm.queues["q"].elements() == left and A not in sm.sessions
    assert _client(sm, A, 8, ops.SESSION_END, stamp=3_000) is None  # a retried end


def test_ops_after_the_end_in_the_same_batch_are_refused() -> None:
    sm = _two_clients()
    results = _apply(sm, [ops.CLIENT_OPS, A, 0, [8, ops.SESSION_END],
                          [9, ops.QUEUE_PUSH, "q", "after"]], stamp=2_000)[0]
    assert results == [None, session_end.ENDED]
    assert "after" not in sm.queues["q"].elements() and A not in sm.sessions


def test_a_member_cannot_end_a_session() -> None:
    sm = _two_clients()
    [refused] = _apply(sm, [ops.SESSION_END], stamp=2_000)
    assert refused.code == "session_end_outside_session"
    assert A in sm.sessions and B in sm.sessions


def test_ended_ids_survive_a_snapshot_and_expire_with_the_session_ttl() -> None:
    sm = _two_clients()
    _client(sm, A, 8, ops.SESSION_END, stamp=2_000)
    copy = StateMachine()
    copy.restore(sm.capture())
    assert A in copy.ended and copy.capture() == sm.capture()
    assert _client(copy, A, 9, ops.QUEUE_PUSH, "q", 1, stamp=3_000) == session_end.ENDED
    _apply(copy, [ops.BARRIER], stamp=2_000 + SESSION_TTL_MS + 1)
    assert A not in copy.ended and "ended_sessions" not in copy.capture()


def test_the_ended_ids_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_end, "ENDED_KEPT", 3)
    sm = StateMachine()
    for n in range(1, 6):
        _client(sm, CLIENT_SESSION_BASE + n, 1, ops.SESSION_END, stamp=n)
    assert list(sm.ended.ended) == [CLIENT_SESSION_BASE + n for n in (3, 4, 5)]
    assert sm.sessions == {} or all(s <= CLIENT_SESSION_BASE for s in sm.sessions)


def test_a_snapshot_with_a_malformed_ended_section_is_refused() -> None:
    doc = StateMachine().capture()
    doc["ended_sessions"] = [[5, 1]]
    with pytest.raises(ValueError, match="ended_sessions"):
        StateMachine().validate(doc)


def test_an_op_refused_for_an_ended_session_may_have_applied_before() -> None:
    with pytest.raises(ProposalRejected, match="session_ended") as refused:
        raise_op_error(session_end.ENDED)
    assert refused.value.applied is None and not isinstance(refused.value, ResultNotKept)
