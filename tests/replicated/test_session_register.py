"""``SESSION_REGISTER``: a client session is opened by a replicated op; an op under a
registered id the table does not hold (expired, given up for the bound, its end
forgotten) is refused and never applied, so a retry is never applied twice."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops, session_end, session_register
from lazily_queue.replicated.client_sessions import OWNER_SHIFT, owner_of, owner_tag
from lazily_queue.replicated.session_register import CHOSEN, REGISTERED_BASE, UNKNOWN, hidden
from lazily_queue.replicated.session_results import NOT_KEPT
from lazily_queue.replicated.state_machine import (
    CLIENT_SESSION_BASE,
    MAX_CLIENT_SESSIONS,
    SESSION_TTL_MS,
    StateMachine,
)

from .apply import apply_fresh as _apply

WEB = owner_tag("web")


def _client(sm: StateMachine, session: int, seq: int, code: int, *args: Any,
            stamp: int = 1_000) -> Any:
    return _apply(sm, [ops.CLIENT_OP, session, seq, 0, code, *args], stamp=stamp)[0]


def _register(sm: StateMachine, tag: int = WEB, stamp: int = 1_000) -> int:
    sid = _apply(sm, [ops.SESSION_REGISTER, tag], stamp=stamp)[0]
    assert type(sid) is int
    return sid


def _machine(max_client_sessions: int | None = None) -> StateMachine:
    sm = StateMachine(max_client_sessions)
    _apply(sm, [ops.QUEUE_DECLARE, "q", None])
    return sm


def test_a_registered_id_is_new_at_every_registration_and_tagged_with_its_client() -> None:
    sm = _machine()
    first, again = _register(sm), _register(sm)  # a delayed duplicate of the same register
    other = _register(sm, owner_tag("mobile"))
    assert len({first, again, other}) == 3
    assert all(sid >= REGISTERED_BASE and sid in sm.sessions for sid in (first, again, other))
    assert owner_of(first) == owner_of(again) == WEB and owner_of(other) == owner_tag("mobile")
    assert sm.client_counts.held(WEB) == 2


def test_a_nonce_sets_the_key_once_and_ids_hide_the_count() -> None:
    sm = _machine()
    tagged = REGISTERED_BASE + CHOSEN + (WEB << OWNER_SHIFT)
    first = _apply(sm, [ops.SESSION_REGISTER, WEB, 12345])[0]
    second = _apply(sm, [ops.SESSION_REGISTER, WEB, 999])[0]  # the key stays 12345
    assert sm.session_key == 12345 and sm.registrations == 2
    assert first == tagged + hidden(12345, 1) and second == tagged + hidden(12345, 2)
    assert {first, second} <= set(sm.sessions) and owner_of(first) == WEB
    counted = _apply(sm, [ops.SESSION_REGISTER, WEB])[0]  # the older form: counted
    assert counted == REGISTERED_BASE + (WEB << OWNER_SHIFT) + 3


def test_hidden_is_a_permutation_that_depends_on_the_key() -> None:
    values = [hidden(7, n) for n in range(1, 20_001)]
    assert len(set(values)) == len(values) and all(0 <= v < 2**OWNER_SHIFT for v in values)
    assert values[:5] != [1, 2, 3, 4, 5] and values[:5] != [hidden(8, n) for n in range(1, 6)]


def test_the_key_survives_a_snapshot_and_a_restored_replica_registers_alike() -> None:
    live = _machine()
    _apply(live, [ops.SESSION_REGISTER, WEB, 2**64 - 1])
    doc = live.capture()
    assert doc["registered_sessions"] == [1, 2**64 - 1]
    restored = StateMachine()
    restored.restore(doc)
    assert (_apply(restored, [ops.SESSION_REGISTER, WEB, 5])
            == _apply(live, [ops.SESSION_REGISTER, WEB, 6]))


def test_a_retry_after_its_session_expired_is_refused_and_not_applied_again() -> None:
    sm = _machine()
    sid = _register(sm)
    assert _client(sm, sid, 1, ops.QUEUE_PUSH, "q", "x") is None
    _apply(sm, [ops.BARRIER], stamp=1_000 + SESSION_TTL_MS + 1)
    assert sid not in sm.sessions
    assert _client(sm, sid, 1, ops.QUEUE_PUSH, "q", "x", stamp=1_000 + SESSION_TTL_MS + 2) \
        == UNKNOWN
    assert sm.queues["q"].elements() == ["x"]
    assert sid not in sm.sessions  # the refusal opened no session


def test_a_retry_after_its_session_was_given_up_for_the_bound_is_refused() -> None:
    sm = _machine()
    sid = _register(sm)
    assert _client(sm, sid, 1, ops.QUEUE_PUSH, "q", "x") is None
    for _ in range(MAX_CLIENT_SESSIONS):  # the same client opens sessions without end
        _register(sm)
    assert sid not in sm.sessions and sm.client_counts.total == MAX_CLIENT_SESSIONS
    assert _apply(sm, [ops.CLIENT_OPS, sid, 0, [1, ops.QUEUE_PUSH, "q", "x"],
                       [2, ops.QUEUE_PUSH, "q", "y"]]) == [[UNKNOWN, UNKNOWN]]
    assert sm.queues["q"].elements() == ["x"]


def test_a_retry_after_its_ended_id_was_forgotten_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_end, "ENDED_KEPT", 8)
    sm = _machine()
    sid = _register(sm)
    assert _client(sm, sid, 1, ops.QUEUE_PUSH, "q", "x") is None
    assert _client(sm, sid, 2, ops.SESSION_END) is None
    for _ in range(8):  # the client cycles sessions: its ended id is pushed out
        _client(sm, _register(sm), 1, ops.SESSION_END)
    assert sid not in sm.ended and sid not in sm.sessions
    assert _client(sm, sid, 1, ops.QUEUE_PUSH, "q", "x") == UNKNOWN
    assert sm.queues["q"].elements() == ["x"]


def test_the_random_ids_of_older_clients_still_open_their_session_at_their_first_op() -> None:
    sm = _machine()
    legacy = CLIENT_SESSION_BASE + (WEB << OWNER_SHIFT) + 12345
    assert _client(sm, legacy, 1, ops.QUEUE_PUSH, "q", "x") is None
    assert legacy in sm.sessions


def test_register_is_refused_inside_a_session_and_when_malformed() -> None:
    sm = _machine()
    sid = _register(sm)
    assert _client(sm, sid, 1, ops.SESSION_REGISTER, WEB) == session_register.IN_SESSION
    assert sm.registrations == 1
    for bad in ([], [-1], [0x10000], ["web"], [WEB, 0], [WEB, 2**64], [WEB, "1"],
                [WEB, True], [WEB, 1, 2]):
        result = _apply(sm, [ops.SESSION_REGISTER, *bad])[0]
        assert isinstance(result, ops.OpError) and result.code == "malformed_session_register"
    assert sm.registrations == 1


def test_a_batch_under_an_unknown_registered_id_is_refused() -> None:
    sm = _machine()
    result = sm.apply(encode_command(REGISTERED_BASE + 5, 0, [[1, ops.QUEUE_PUSH, "q", "x"]]),
                      1_000)
    assert result == UNKNOWN and sm.queues["q"].elements() == []


def test_registrations_survive_a_snapshot_and_a_restored_replica_registers_alike() -> None:
    live = _machine()
    sid = _register(live)
    _client(live, sid, 1, ops.QUEUE_PUSH, "q", "x")
    doc = live.capture()
    assert doc["registered_sessions"] == 1
    restored = StateMachine()
    restored.restore(doc)
    assert _register(restored) == _register(live) != sid
    assert "registered_sessions" not in StateMachine().capture()


@pytest.mark.parametrize("section, problem", [
    ("x", "is not a count of registrations"),
    ([1, 0], "key 0 is not an int"),
    ([1, "k"], "key 'k' is not an int"),
    ([0, 1], "is not a count of registrations"),
    (-1, "is not a count of registrations"),
    (True, "is not a count of registrations"),
    (2**OWNER_SHIFT, "is not a count of registrations"),
])
def test_a_malformed_registered_sessions_section_is_refused_by_name(section: Any,
                                                                    problem: str) -> None:
    doc = _machine().capture()
    doc["registered_sessions"] = section
    with pytest.raises(ValueError, match=f"registered_sessions.*{problem}"):
        StateMachine().validate(doc)


def test_a_snapshot_holding_a_session_registered_past_its_count_is_refused() -> None:
    sm = _machine()
    _register(sm)
    _register(sm)
    doc = sm.capture()
    doc["registered_sessions"] = 1
    with pytest.raises(ValueError, match="registered after the 1 registrations"):
        StateMachine().validate(doc)


MEMBER = 7


def _member(sm: StateMachine, seq: int, op: list[Any], stamp: int = 2_000) -> Any:
    """Apply ``op`` as member session ``MEMBER``'s op ``seq`` (applied again: a retry of
    a batch whose first answer the member lost, over a leader change say)."""
    result = sm.apply(encode_command(MEMBER, 1, [[seq, *op]]), stamp)
    assert isinstance(result, list)
    return result[0]


def _forgotten(sm: StateMachine) -> int:
    sid = _register(sm)
    for _ in range(MAX_CLIENT_SESSIONS):  # the same client opens sessions without end
        _register(sm)
    assert sid not in sm.sessions
    return sid


def test_a_members_retry_of_a_client_op_refused_under_a_forgotten_session_is_refused_again(
        ) -> None:
    sm = _machine()
    sid = _forgotten(sm)
    push = [ops.CLIENT_OP, sid, 1, 0, ops.QUEUE_PUSH, "q", "x"]
    pushes = [ops.CLIENT_OPS, sid, 0, [2, ops.QUEUE_PUSH, "q", "y"], [3, ops.BARRIER]]
    assert _member(sm, 1, push) == UNKNOWN
    assert _member(sm, 2, pushes) == [UNKNOWN, UNKNOWN]
    restored = StateMachine()
    restored.restore(sm.capture())
    for replica in (sm, restored):  # never answered as applied ("duplicate")
        assert _member(replica, 1, push, 3_000) == UNKNOWN
        assert _member(replica, 2, pushes, 3_000) == [UNKNOWN, UNKNOWN]
        assert replica.queues["q"].elements() == [] and sid not in replica.sessions
        assert replica.sessions[MEMBER].kept_bytes == 0
    assert restored.capture() == sm.capture()


def test_a_members_retry_of_a_client_op_refused_under_an_ended_session_stays_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_end, "ENDED_KEPT", 8)
    sm = _machine()
    legacy = CLIENT_SESSION_BASE + (WEB << OWNER_SHIFT) + 12345
    ended = []
    for sid in (_register(sm), legacy):
        assert _client(sm, sid, 1, ops.SESSION_END) is None
        ended.append(sid)
    assert _member(sm, 1, [ops.CLIENT_OP, ended[0], 2, 0, ops.QUEUE_PUSH, "q", "x"]) \
        == session_end.ENDED
    assert _member(sm, 2, [ops.CLIENT_OP, legacy, 2, 0, ops.QUEUE_PUSH, "q", "x"]) \
        == session_end.ENDED
    for _ in range(8):  # the client cycles sessions: the ended ids are pushed out
        _client(sm, _register(sm), 1, ops.SESSION_END)
    assert not {*ended} & {*sm.ended.ended, *sm.sessions}
    assert _member(sm, 1, [ops.CLIENT_OP, ended[0], 2, 0, ops.QUEUE_PUSH, "q", "x"]) \
        == UNKNOWN
    assert _member(sm, 2, [ops.CLIENT_OP, legacy, 2, 0, ops.QUEUE_PUSH, "q", "x"]) \
        == session_end.ENDED
    assert sm.queues["q"].elements() == [] and legacy not in sm.sessions


def test_a_members_retry_of_a_client_op_applied_before_its_session_went_is_not_refused(
        ) -> None:
    sm = _machine()
    sid = _register(sm)
    push = [ops.CLIENT_OP, sid, 1, 0, ops.QUEUE_PUSH, "q", "x"]
    assert _member(sm, 1, push) is None
    for _ in range(MAX_CLIENT_SESSIONS):
        _register(sm)
    assert sid not in sm.sessions
    assert _member(sm, 1, push) == NOT_KEPT  # applied: its result is no longer kept
    assert sm.queues["q"].elements() == ["x"]
