"""What a member's session keeps: its own ops' results within a bound of its own
(:data:`MEMBER_KEPT_BYTES`), and no copy of the results of the client ops it proposed,
whose retry the client's session answers."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops, session_end, session_results
from lazily_queue.replicated.session_results import (
    MEMBER_KEPT_BYTES,
    NOT_KEPT,
    SESSION_KEPT_BYTES,
)
from lazily_queue.replicated.state_machine import (
    CLIENT_SESSION_BASE,
    SESSION_TTL_MS,
    StateMachine,
)

MiB = 1 << 20
MEMBER = 7
N = 12


def _filled(n: int = N) -> StateMachine:
    sm = StateMachine()
    sm.apply(encode_command(99, 1, [[1, ops.QUEUE_DECLARE, "q", None]]
                            + [[i + 2, ops.QUEUE_PUSH, "q", f"{i}" * MiB] for i in range(n)]), 1)
    return sm


def _each(sm: StateMachine, batches: list[bytes], stamp: int) -> list[Any]:
    out = []
    for batch in batches:
        result = sm.apply(batch, stamp)
        assert isinstance(result, list)
        out.append(result[0])
    return out


def test_a_members_pops_in_flight_over_a_leader_change_are_all_answered_again() -> None:
    sm = _filled()
    batches = [encode_command(MEMBER, 1, [[s, ops.QUEUE_POP, "q"]]) for s in range(1, N + 1)]
    first = _each(sm, batches, 2)
    assert N * MiB > SESSION_KEPT_BYTES  # more than a client's session keeps
    assert _each(sm, batches, 3) == first  # the answers were lost: retried
    assert sm.queues["q"].elements() == []


def test_a_member_keeps_its_own_results_within_its_own_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_results, "MEMBER_KEPT_BYTES", 4 * MiB + 4096)
    sm = _filled(6)
    batches = [encode_command(MEMBER, 1, [[s, ops.QUEUE_POP, "q"]]) for s in range(1, 7)]
    first = _each(sm, batches, 2)
    again = _each(sm, batches, 3)
    assert again[:2] == [NOT_KEPT, NOT_KEPT] and again[2:] == first[2:]
    assert MEMBER_KEPT_BYTES >= 8 * SESSION_KEPT_BYTES


def _clients_popping(sm: StateMachine) -> list[bytes]:
    return [encode_command(MEMBER, 1, [[s, ops.CLIENT_OP, CLIENT_SESSION_BASE + s, 1, 0,
                                        ops.QUEUE_POP, "q"]]) for s in range(1, N + 1)]


def test_a_members_retried_client_ops_are_answered_by_the_clients_sessions() -> None:
    sm = _filled()
    batches = _clients_popping(sm)
    first = _each(sm, batches, 2)
    assert first == [f"{i}" * MiB for i in range(N)]
    assert sm.sessions[MEMBER].kept_bytes == 0  # no second copy of the clients' results
    assert sm.kept.total == sum(sm.sessions[CLIENT_SESSION_BASE + s].kept_bytes
                                for s in range(1, N + 1))
    assert _each(sm, batches, 3) == first
    copy = StateMachine()
    copy.restore(sm.capture())
    assert _each(copy, batches, 4) == first


def test_a_retried_client_op_whose_session_went_is_not_applied_again() -> None:
    sm = _filled(3)
    batches = _clients_popping(sm)[:3]
    _each(sm, batches, 2)
    sm.apply(encode_command(MEMBER, 1, [[N + 1, ops.BARRIER]]), 2 + SESSION_TTL_MS // 2)
    sm.apply(encode_command(MEMBER + 1, 1, [[1, ops.CLIENT_OP, CLIENT_SESSION_BASE + 1, 2, 0,
                                             ops.SESSION_END]]), 3 + SESSION_TTL_MS // 2)
    sm.apply(encode_command(MEMBER + 2, 1, [[1, ops.CLIENT_OP, CLIENT_SESSION_BASE + 3, 2, 0,
                                             ops.BARRIER]]), 3 + SESSION_TTL_MS // 2)
    sm.apply(encode_command(MEMBER, 1, [[N + 2, ops.BARRIER]]), 4 + SESSION_TTL_MS)
    assert CLIENT_SESSION_BASE + 2 not in sm.sessions  # expired, idle for an hour
    sm.apply(encode_command(99, 2, [[20, ops.QUEUE_PUSH, "q", "more"]]), 5 + SESSION_TTL_MS)
    again = _each(sm, batches, 6 + SESSION_TTL_MS)
    assert again[0] == session_end.ENDED and again[1] == NOT_KEPT
    assert sm.queues["q"].elements() == ["more"]  # nothing popped again
