"""What a client session popped and did not give back, as a replica applied it: noted by
the pops that applied in the session, taken off by its give-backs, gone with the session,
and bounded."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops, session_popped
from lazily_queue.replicated.client_sessions import OWNER_SHIFT, owner_tag
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine

CLIENT = CLIENT_SESSION_BASE + 77
OTHER = CLIENT_SESSION_BASE + 78
_members = iter(range(100, 10**6))


def _apply(sm: StateMachine, *op_list: list[Any]) -> list[Any]:
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(next(_members), 0, ops_with_seq), 1_000)
    assert isinstance(result, list)
    return result


def _client(seq: int, code: int, *args: Any, session: int = CLIENT) -> list[Any]:
    return [ops.CLIENT_OP, session, seq, 1, code, *args]


def _held(sm: StateMachine, sid: int = CLIENT) -> list[tuple[str, int]]:
    record = sm.popped.of(sid)
    return [] if record is None else sorted(record.index)


def _queue(sm: StateMachine, *values: Any) -> None:
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], *([ops.QUEUE_PUSH, "q", v] for v in values))


def test_a_pop_notes_what_it_handed_out_and_a_give_back_takes_it_off() -> None:
    sm = StateMachine()
    _queue(sm, "a", "b", "c")
    [(values, _runs)] = _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 2))
    assert values == ["a", "b"] and _held(sm) == [("q", 0), ("q", 1)]
    record = sm.popped.of(CLIENT)
    assert record is not None
    pop = record.find("q", 1)
    assert pop is not None and pop.element(1) == ("b", None)
    assert _apply(sm, _client(2, ops.QUEUE_UNPOP_STAMPED, "q", ["b"], [[1, 1, 1_000]])) == [None]
    assert _held(sm) == [("q", 0)]
    # a retry of the pop is answered from the session: it notes nothing again
    _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 2))
    assert _held(sm) == [("q", 0)] and _held(sm, OTHER) == []


def test_a_pop_under_a_reused_seq_or_refused_notes_nothing() -> None:
    sm = StateMachine()
    _queue(sm, "a")
    _apply(sm, _client(1, ops.QUEUE_PUSH, "q", "x"))
    assert _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 1))[0] is None  # push's
    assert _held(sm) == []
    refused = _apply(sm, _client(2, ops.QUEUE_POP_STAMPED, "nothing", 1))
    assert isinstance(refused[0], ops.OpError) and _held(sm) == []


def test_a_session_ended_or_dropped_takes_its_record_along() -> None:
    sm = StateMachine()
    _queue(sm, "a", "b")
    _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 1),
           _client(1, ops.QUEUE_POP_STAMPED, "q", 1, session=OTHER))
    assert _held(sm) == [("q", 0)] and _held(sm, OTHER) == [("q", 1)]
    _apply(sm, _client(2, ops.SESSION_END))
    assert _held(sm) == [] and sm.popped.count == 1
    restored = StateMachine()
    restored.restore(sm.capture())
    assert _held(restored) == [] and _held(restored, OTHER) == [("q", 1)]


def test_the_records_are_bounded_per_session_and_in_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_popped, "SESSION_ELEMENTS", 4)
    monkeypatch.setattr(session_popped, "ELEMENTS", 8)
    sm = StateMachine()
    _queue(sm, *range(40))
    for seq in range(1, 4):
        _apply(sm, _client(seq, ops.QUEUE_POP_STAMPED, "q", 2))
    assert _held(sm) == [("q", 2), ("q", 3), ("q", 4), ("q", 5)]  # its oldest pop went
    sessions = [CLIENT_SESSION_BASE + 100 + n for n in range(3)]
    for n, sid in enumerate(sessions):
        _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 1 + n, session=sid))
    # over 8 in all: the sessions holding the most gave up their oldest pops, down to 6
    assert sm.popped.count <= 6
    assert sum(len(_held(sm, sid)) for sid in [CLIENT, *sessions]) == sm.popped.count
    assert sm.popped.bytes == sum(r.bytes for r in sm.popped.by_session.values())


def test_a_pop_handing_out_one_element_twice_notes_it_once() -> None:
    """A producer may give an element back twice, so a queue can hold one id twice; a
    session's pop taking both copies applies and holds the element once, and a snapshot
    of the record restores what the log built."""
    sm = StateMachine()
    _apply(sm, [ops.POPPED_CHECKING])
    _queue(sm, "a", "b", "c")
    [(popped, _runs)] = _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 2])
    assert popped == ["a", "b"]
    _apply(sm, [ops.QUEUE_UNPOP_STAMPED, "q", ["a"], [[0, 1, 1_000]]],
           [ops.QUEUE_UNPOP_STAMPED, "q", ["a"], [[0, 1, 1_000]]],
           [ops.QUEUE_UNPOP_STAMPED, "q", ["b"], [[1, 1, 1_000]]])
    [result] = _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 3))
    assert not isinstance(result, ops.OpError), result
    assert result[0] == ["b", "a", "a"]
    assert _held(sm) == [("q", 0), ("q", 1)] and sm.popped.count == 2
    restored = StateMachine()
    restored.restore(sm.capture())
    record, again = sm.popped.of(CLIENT), restored.popped.of(CLIENT)
    assert record is not None and again is not None
    assert record.index == again.index and restored.popped.count == 2
    for replica in (sm, restored):
        back = _apply(replica, _client(2, ops.QUEUE_UNPOP_STAMPED_CHECKED, "q", ["a"],
                                       [[0, 1, 1_000]]),
                      _client(3, ops.QUEUE_UNPOP_STAMPED_CHECKED, "q", ["a"],
                              [[0, 1, 1_000]]))
        assert back[0] is None and isinstance(back[1], ops.OpError), back
        assert _held(replica) == [("q", 1)] and replica.popped.count == 1


def test_a_snapshot_restores_an_element_popped_twice_as_its_first_copy() -> None:
    """One id given back twice under two values: the session's pop of both copies holds
    the element as its first copy, and so does the record a snapshot restores (a member's
    gate reads the same value as its peers')."""
    sm = StateMachine()
    _apply(sm, [ops.POPPED_CHECKING])
    _queue(sm, "a", "b")
    _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 1])
    _apply(sm, [ops.QUEUE_UNPOP_STAMPED, "q", ["a"], [[0, 1, 1_000]]],
           [ops.QUEUE_UNPOP_STAMPED, "q", ["other"], [[0, 1, 1_000]]])
    [result] = _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 3))
    assert result[0] == ["other", "a", "b"]
    restored = StateMachine()
    restored.restore(sm.capture())
    for replica in (sm, restored):
        record = replica.popped.of(CLIENT)
        pop = None if record is None else record.find("q", 0)
        assert pop is not None and pop.left == {0: 0, 1: 2}
        assert pop.element(0) == ("other", None) and pop.stamp(0) == 1_000


def test_past_the_bound_a_clients_many_small_sessions_give_up_before_anothers_large_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One client popping many small elements under many sessions went past the elements
    bound, and the session holding the most bytes gave up its pops first: another
    client's session, its prefetch then refused as a give-back (lost). The clients
    holding the largest share of a bound in all their sessions give up theirs first."""
    monkeypatch.setattr(session_popped, "SESSION_ELEMENTS", 4)
    monkeypatch.setattr(session_popped, "ELEMENTS", 8)

    def session(client: str, n: int) -> int:
        return CLIENT_SESSION_BASE + (owner_tag(client) << OWNER_SHIFT) + 1 + n

    sm = StateMachine()
    _queue(sm, "v" * 1000, "v" * 1000, *range(9))
    honest = session("honest", 0)
    _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 2, session=honest))
    flood = [session("flood", n) for n in range(3)]
    for sid in flood:
        _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 3, session=sid))
    assert sm.popped.count <= 6
    assert _held(sm, honest) == [("q", 0), ("q", 1)]
    assert sum(len(_held(sm, sid)) for sid in flood) == sm.popped.count - 2


def test_a_queue_deleted_takes_what_the_sessions_popped_from_it_off_their_records() -> None:
    """A queue declared again under a deleted one's name hands out its ids again: a
    session's element popped from the deleted one, given back, went into the new queue
    beside the new element of its id."""
    sm = StateMachine()
    _apply(sm, [ops.POPPED_CHECKING])
    _queue(sm, "old", "kept")
    [[values, runs]] = _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 1))
    _apply(sm, [ops.QUEUE_DECLARE, "other", None], [ops.QUEUE_PUSH, "other", "o"])
    _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "other", 1, session=OTHER))
    _apply(sm, [ops.QUEUE_DELETE, "q"])
    assert _held(sm) == [] and _held(sm, OTHER) == [("other", 0)] and sm.popped.count == 1
    _queue(sm, "new")
    [refused] = _apply(sm, _client(2, ops.QUEUE_UNPOP_STAMPED_CHECKED, "q", values, runs))
    assert refused.code == session_popped.REFUSED
    assert sm.queues["q"].elements() == ["new"]
