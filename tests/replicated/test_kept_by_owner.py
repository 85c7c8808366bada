"""Past the bound of all kept results, the client keeping the most in all its sessions
gives up its results first: a client spreading claim results over hundreds of sessions,
each keeping less than another client's one session, took that session's result, and its
retry after a failover failed with ResultNotKept."""

from __future__ import annotations

from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import CLIENT_SESSION_BASE, OWNER_SHIFT
from lazily_queue.replicated.session_results import KEPT_BYTES, NOT_KEPT
from lazily_queue.replicated.state_machine import StateMachine
from tests.replicated.test_session_kept_bytes import _apply, _client

HONEST = CLIENT_SESSION_BASE + (1 << OWNER_SHIFT) + 5
GREEDY = CLIENT_SESSION_BASE + (2 << OWNER_SHIFT)
BIG, SMALL = b"h" * (512 * 1024), b"a" * (400 * 1024)


def _claim(sm: StateMachine, queue: str, worker: str, session: int) -> list[object]:
    [claimed] = _apply(sm, _client(1, ops.WORK_CLAIM_MANY, queue, worker, 1, 0,
                                   session=session))
    assert isinstance(claimed, list)
    return claimed


def test_a_client_spreading_results_over_many_sessions_gives_up_its_own() -> None:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 30_000, 1_000_000], [ops.WORK_PUSH, "w", BIG],
           [ops.WORK_DECLARE, "many", 30_000, 1_000_000])
    claimed = _claim(sm, "w", "honest", HONEST)
    kept = sm.sessions[HONEST].kept_bytes
    assert kept > len(BIG)
    greedy = KEPT_BYTES // len(SMALL) + 20  # past the bound, each under the honest one
    for k in range(greedy):
        _apply(sm, [ops.WORK_PUSH, "many", SMALL])
        _claim(sm, "many", f"w{k}", GREEDY + 1 + k)
    assert sm.kept.total < KEPT_BYTES  # shed
    assert sm.sessions[HONEST].kept_bytes == kept
    assert _claim(sm, "w", "honest", HONEST) == claimed  # a retry: its first answer
    shed = [sid for sid in range(GREEDY + 1, GREEDY + 1 + greedy)
            if sm.sessions[sid].done.get(1) == NOT_KEPT]
    assert len(shed) > greedy // 5
    assert sm.kept.total == sum(s.kept_bytes for s in sm.sessions.values())


def test_many_clients_of_one_session_each_are_shed_within_the_bound() -> None:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "many", 30_000, 1_000_000])
    for k in range(KEPT_BYTES // len(SMALL) + 20):  # each client its own, one session each
        _apply(sm, [ops.WORK_PUSH, "many", SMALL])
        _claim(sm, "many", f"w{k}", CLIENT_SESSION_BASE + ((k + 1) << OWNER_SHIFT) + 1)
    assert sm.kept.total < KEPT_BYTES
    assert sm.kept.total == sum(s.kept_bytes for s in sm.sessions.values())
