"""The ephemeral subscriptions client sessions own: noted at subscribe, refreshed by
``CLIENT_ALIVE``, removed by ``EPHEMERAL_REAP`` once stale or with their session."""

from __future__ import annotations

from itertools import count
from typing import Any

from lazily_queue.maintenance import due_operations
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated import state_machine as sm_module
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from lazily_queue.replicated.view import ReadView

A = CLIENT_SESSION_BASE + 11
B = CLIENT_SESSION_BASE + 22
GRACE = 90_000
_members = count(1)
_seqs = count(1)


def _apply(sm: StateMachine, *op_list: list[Any], stamp: int,
           member: int | None = None) -> list[Any]:
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    member = next(_members) if member is None else member
    result = sm.apply(encode_command(member, 0, ops_with_seq), stamp)
    assert isinstance(result, list)
    return result


def _client(sm: StateMachine, session: int, code: int, *args: Any, stamp: int) -> Any:
    return _apply(sm, [ops.CLIENT_OP, session, next(_seqs), 0, code, *args], stamp=stamp)[0]


def _subs(sm: StateMachine, topic: str = "t") -> set[str]:
    return set(sm.topics[topic].subscriptions())


def _cluster(stamp: int = 1_000) -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE, "t"], [ops.TOPIC_SUBSCRIBE, "t", "member", "ephemeral"],
           stamp=stamp)
    _client(sm, A, ops.TOPIC_SUBSCRIBE, "t", "a", "ephemeral", stamp=stamp)
    _client(sm, A, ops.TOPIC_SUBSCRIBE, "t", "a-durable", "durable", stamp=stamp)
    _client(sm, B, ops.TOPIC_SUBSCRIBE_AT, "t", "b", "ephemeral", "head", stamp=stamp)
    return sm


def test_a_client_sessions_ephemeral_subscription_is_noted_as_its_own() -> None:
    sm = _cluster()
    owners = sm.ephemeral_owners
    assert owners.owner == {("t", "a"): A, ("t", "b"): B}  # not the durable, nor the member's
    assert owners.alive == {A: 1_000, B: 1_000}


def test_a_reap_removes_only_the_subscriptions_of_stale_owners() -> None:
    sm = _cluster()
    assert _apply(sm, [ops.CLIENT_ALIVE, [B]], stamp=50_000) == [1]
    assert _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=91_000) == [0]  # A: 90 s exactly
    assert _subs(sm) == {"member", "a", "a-durable", "b"}
    assert _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=91_001) == [1]
    assert _subs(sm) == {"member", "a-durable", "b"}  # B was refreshed at 50 s
    assert sm.ephemeral_owners.owner == {("t", "b"): B}
    assert _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=140_001) == [1]
    assert _subs(sm) == {"member", "a-durable"}
    assert len(sm.ephemeral_owners) == 0 and sm.ephemeral_owners.alive == {}


def test_a_refresh_applied_before_the_reap_keeps_the_subscriptions() -> None:
    sm = _cluster()
    assert _apply(sm, [ops.CLIENT_ALIVE, [A, B, CLIENT_SESSION_BASE + 5]],
                  [ops.EPHEMERAL_REAP, GRACE], stamp=200_000) == [2, 0]
    assert _subs(sm) == {"member", "a", "a-durable", "b"}


def test_an_ended_subscription_is_forgotten_and_a_members_own_is_never_reaped() -> None:
    sm = _cluster()
    _client(sm, A, ops.TOPIC_DISCONNECT, "t", "a", stamp=2_000)
    _apply(sm, [ops.TOPIC_DELETE_SUBSCRIBER, "t", "b"], stamp=2_000)
    assert sm.ephemeral_owners.owner == {} and sm.ephemeral_owners.alive == {}
    _apply(sm, [ops.TOPIC_SUBSCRIBE, "t", "a", "ephemeral"], stamp=3_000)  # a member's now
    assert _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=500_000) == [0]
    assert _subs(sm) == {"member", "a", "a-durable"}


def test_a_deleted_topic_forgets_its_owners() -> None:
    sm = _cluster()
    _apply(sm, [ops.TOPIC_DELETE, "t"], stamp=2_000)
    assert len(sm.ephemeral_owners) == 0
    _apply(sm, [ops.TOPIC_DECLARE, "t"], [ops.TOPIC_SUBSCRIBE, "t", "a", "ephemeral"],
           stamp=3_000)
    assert _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=500_000) == [0]
    assert _subs(sm) == {"a"}


def test_another_client_subscribing_an_owned_id_takes_it_over() -> None:
    sm = _cluster()
    assert _client(sm, B, ops.TOPIC_SUBSCRIBE, "t", "a", "ephemeral",
                   stamp=60_000) == "AlreadyConnected"
    assert sm.ephemeral_owners.owner[("t", "a")] == B
    _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=95_000)  # A's alive time is gone
    assert _subs(sm) == {"member", "a", "a-durable", "b"}


def test_a_snapshot_keeps_owners_and_times_and_an_old_one_loads() -> None:
    sm = _cluster()
    _apply(sm, [ops.CLIENT_ALIVE, [B]], stamp=50_000)
    doc = sm.capture()
    assert doc["ephemeral_owners"] == [[A, 1_000, [["t", "a"]]], [B, 50_000, [["t", "b"]]]]
    restored = StateMachine()
    restored.restore(doc)
    assert restored.ephemeral_owners.owner == sm.ephemeral_owners.owner
    assert restored.ephemeral_owners.alive == sm.ephemeral_owners.alive
    for replica in (sm, restored):  # the same entry on both
        _apply(replica, [ops.EPHEMERAL_REAP, GRACE], stamp=100_000, member=999_999)
    assert restored.capture() == sm.capture()
    assert _subs(restored) == {"member", "a-durable", "b"}
    old = dict(doc)
    del old["ephemeral_owners"]
    older = StateMachine()
    older.restore(old)
    assert len(older.ephemeral_owners) == 0


def test_a_dropped_session_loses_its_ephemeral_subscriptions(
        monkeypatch: Any) -> None:
    sm = _cluster()
    # A refreshed at 3_000_000 stays; B, not seen for the session TTL, is dropped.
    _apply(sm, [ops.CLIENT_ALIVE, [A]], stamp=3_000_000)
    _apply(sm, [ops.BARRIER], stamp=1_000 + sm_module.SESSION_TTL_MS + 1)
    assert B not in sm.sessions and A in sm.sessions
    assert _subs(sm) == {"member", "a", "a-durable"}
    assert sm.ephemeral_owners.owner == {("t", "a"): A}
    # At the table's bound, the least recently seen session of the client with most goes.
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", len(
        [s for s in sm.sessions if s > CLIENT_SESSION_BASE]))
    _client(sm, A + 1, ops.BARRIER, stamp=3_700_000)
    assert A not in sm.sessions
    assert _subs(sm) == {"member", "a-durable"}


def test_bad_args_are_refused_without_a_change() -> None:
    sm = _cluster()
    results = _apply(sm, [ops.CLIENT_ALIVE, A], [ops.EPHEMERAL_REAP, "90"],
                     [ops.EPHEMERAL_REAP, -1], [ops.EPHEMERAL_REAP], stamp=500_000)
    assert [r.code for r in results] == ["bad_args"] * 4
    assert _subs(sm) == {"member", "a", "a-durable", "b"}


def test_the_leader_proposes_a_reap_once_an_owner_is_stale() -> None:
    sm = _cluster()
    sm.popped.start_checking()  # (else POPPED_CHECKING is due as well)
    view = ReadView(sm)
    assert due_operations(view, 91_000, gc_topics=False, reap_grace_ms=GRACE) == []
    assert due_operations(view, 91_001, gc_topics=False, reap_grace_ms=GRACE) == [
        (ops.EPHEMERAL_REAP, [GRACE])]
    assert due_operations(view, 91_001, gc_topics=False) == []  # not leading long enough


def test_a_client_subscribing_a_members_ephemeral_id_becomes_its_owner() -> None:
    sm = _cluster()
    assert _client(sm, A, ops.TOPIC_SUBSCRIBE, "t", "member", "ephemeral",
                   stamp=2_000) == "AlreadyConnected"
    assert sm.ephemeral_owners.owner[("t", "member")] == A
    _apply(sm, [ops.CLIENT_ALIVE, [B]], stamp=50_000)
    assert _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=92_001) == [2]  # A crashed
    assert _subs(sm) == {"a-durable", "b"}


def test_a_member_subscribing_a_clients_ephemeral_id_clears_its_owner() -> None:
    sm = _cluster()
    assert _apply(sm, [ops.TOPIC_SUBSCRIBE_AT, "t", "a", "ephemeral", "head"],
                  stamp=2_000) == [["ok", "AlreadyConnected"]]
    assert sm.ephemeral_owners.owner == {("t", "b"): B}
    assert A not in sm.ephemeral_owners.alive
    _apply(sm, [ops.EPHEMERAL_REAP, GRACE], stamp=200_000)
    assert _subs(sm) == {"member", "a", "a-durable"}  # the member's own stays
    _client(sm, B, ops.TOPIC_SUBSCRIBE, "t", "a", "ephemeral", stamp=201_000)
    assert sm.ephemeral_owners.owner == {("t", "a"): B}  # and a client takes it again


def test_a_reap_acts_in_session_order_on_a_restored_replica_as_on_a_live_one() -> None:
    sm = _cluster()
    _client(sm, CLIENT_SESSION_BASE + 5, ops.TOPIC_SUBSCRIBE, "t", "c", "ephemeral",
            stamp=1_000)
    restored = StateMachine()
    restored.restore(sm.capture())
    assert list(restored.ephemeral_owners.alive) != list(sm.ephemeral_owners.alive)
    sm.drain_events()
    restored.drain_events()
    assert ReadView(sm).ephemeral_owners_stale(91_001, GRACE)
    assert ReadView(restored).ephemeral_owners_stale(91_001, GRACE)
    for replica in (sm, restored):
        replica.apply(encode_command(9, 0, [[1, ops.EPHEMERAL_REAP, GRACE]]), 91_001)
    assert restored.capture() == sm.capture()
    assert restored.drain_events() == sm.drain_events()
    assert not ReadView(sm).ephemeral_owners_stale(91_001, GRACE)
