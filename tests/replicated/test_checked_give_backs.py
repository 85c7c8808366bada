"""A checked give-back (a client without the produce permission giving back what its
session popped) applies only as the session's record of popped elements allows, the same
on every replica: the same element given back under two sequence numbers applies once,
on a replica that applied the pop and on one that restored a snapshot since (of this
version, or of an earlier one: it covers no checked give-back); the first checked
give-back applies unchecked and empties the records, and the flag travels in snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.maintenance import due_operations
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.snapshot import decode_snapshot, encode_snapshot
from lazily_queue.replicated import ops, session_popped
from lazily_queue.replicated.session_popped_snapshot import CHECKING, KEY
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from lazily_queue.replicated.view import ReadView

CLIENT = CLIENT_SESSION_BASE + 77
OTHER = CLIENT_SESSION_BASE + 78
CHECKED = ops.QUEUE_UNPOP_STAMPED_CHECKED
_members = iter(range(100, 10**6))


def _apply(sm: StateMachine, *op_list: list[Any]) -> list[Any]:
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(next(_members), 0, ops_with_seq), 1_000)
    assert isinstance(result, list)
    return result


def _both(replicas: list[StateMachine], *op_list: list[Any]) -> list[Any]:
    """Apply one entry on every replica; their results, the same on each."""
    member = next(_members)
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    results = [sm.apply(encode_command(member, 0, ops_with_seq), 1_000) for sm in replicas]
    assert all(r == results[0] for r in results)
    return results[0]  # type: ignore[no-any-return]


def _client(seq: int, code: int, *args: Any, session: int = CLIENT) -> list[Any]:
    return [ops.CLIENT_OP, session, seq, 1, code, *args]


def _restored(state: dict[str, Any]) -> StateMachine:
    """A replica restored from a snapshot file holding ``state``."""
    data = encode_snapshot({"format": 1, "state": state, "last": [b"b", 9, 1],
                            "prev": [b"a", 8, 1], "members": ["1"]})
    sm = StateMachine()
    sm.restore(decode_snapshot(data)["state"])
    return sm


def _queue(sm: StateMachine) -> list[Any]:
    return list(sm.queues["q"].elements())


def _popped_once(checking: bool) -> tuple[StateMachine, list[Any]]:
    """A replica whose client session popped ``a`` (checking already, or not yet)."""
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.QUEUE_PUSH, "q", "a"],
           [ops.QUEUE_PUSH, "q", "b"])
    if checking:
        _apply(sm, _client(1, CHECKED, "q", [], []))
        assert sm.popped.checking
    [(values, runs)] = _apply(sm, _client(2, ops.QUEUE_POP_STAMPED, "q", 1))
    assert values == ["a"]
    return sm, runs


@pytest.mark.parametrize(("checking", "earlier"), [(True, False), (False, False),
                                                   (False, True)])
def test_one_element_given_back_twice_applies_once_on_every_replica(
        checking: bool, earlier: bool) -> None:
    """The pop applied on one replica; the other restored a snapshot taken after it (of
    an earlier version: without the record): both apply the first give-back and
    refuse the second, and hold the element once."""
    applied, runs = _popped_once(checking)
    state = applied.capture()
    if earlier:
        state.pop(KEY, None)
        state.pop(CHECKING, None)
    restored = _restored(state)
    replicas = [applied, restored]
    assert _both(replicas, _client(3, CHECKED, "q", ["a"], runs)) == [None]
    [second] = _both(replicas, _client(4, CHECKED, "q", ["a"], runs))
    assert isinstance(second, ops.OpError) and second.code == session_popped.REFUSED
    assert _queue(applied) == _queue(restored) == ["a", "b"]
    assert applied.capture() == restored.capture()
    # the retry of the first is answered from the session, the second's likewise
    assert _both(replicas, _client(3, CHECKED, "q", ["a"], runs)) == [None]
    assert _both(replicas, _client(4, CHECKED, "q", ["a"], runs)) == [second]
    assert _queue(applied) == ["a", "b"]


def test_one_entry_holding_both_give_backs_applies_the_first() -> None:
    sm, runs = _popped_once(True)
    first, second = _apply(sm, _client(3, CHECKED, "q", ["a"], runs),
                           _client(4, CHECKED, "q", ["a"], runs))
    assert first is None and isinstance(second, ops.OpError)
    assert _queue(sm) == ["a", "b"]


def test_a_give_back_naming_one_element_not_held_applies_nothing() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], *([ops.QUEUE_PUSH, "q", v] for v in "abc"),
           _client(1, CHECKED, "q", [], []))
    [(values, runs)] = _apply(sm, _client(2, ops.QUEUE_POP_STAMPED, "q", 2))
    stamp = runs[0][2]
    refused = _apply(sm, _client(3, CHECKED, "q", ["a", "b", "c"], [[0, 3, stamp]]),
                     _client(4, CHECKED, "q", ["a", "a"], [[0, 1, stamp], [0, 1, stamp]]),
                     _client(5, CHECKED, "q", ["a"], [[0, 1, stamp]], session=OTHER))
    assert all(isinstance(r, ops.OpError) and r.code == session_popped.REFUSED
               for r in refused)
    assert _queue(sm) == ["c"]
    assert _apply(sm, _client(6, ops.QUEUE_UNPOP_HEADERS_CHECKED, "q", values, runs, [])) == [
        None]
    assert _queue(sm) == ["a", "b", "c"] and sm.popped.of(CLIENT) is not None


def test_the_first_checked_give_back_applies_unchecked_and_empties_the_records() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], *([ops.QUEUE_PUSH, "q", v] for v in "ab"))
    [(_, runs), _] = _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 1),
                            _client(1, ops.QUEUE_POP_STAMPED, "q", 1, session=OTHER))
    assert not sm.popped.checking and sm.popped.count == 2
    assert CHECKING not in sm.capture()
    assert _apply(sm, _client(2, CHECKED, "q", ["a"], runs)) == [None]
    assert sm.popped.checking and sm.popped.count == 0 and _queue(sm) == ["a"]
    state = sm.capture()
    assert state[CHECKING] is True and _restored(state).popped.checking


def test_the_checking_flag_must_be_true_where_given() -> None:
    sm, _ = _popped_once(True)
    state = sm.capture()
    state[CHECKING] = 1
    with pytest.raises(ValueError, match=CHECKING):
        _restored(state)


def test_a_checked_give_back_outside_a_client_session_is_refused() -> None:
    sm, runs = _popped_once(True)
    [result] = _apply(sm, [CHECKED, "q", ["a"], runs])
    assert isinstance(result, ops.OpError) and result.code == "not_in_session"
    assert _queue(sm) == ["b"]


def test_checking_starts_at_the_popped_checking_op_and_keeps_every_sessions_pops() -> None:
    """The leader's ``POPPED_CHECKING`` empties the records once, before any pop; a
    session's give-back then leaves another session's pops held, and its give-back
    applies (as it would not had the first give-back emptied the records)."""
    replicas = [StateMachine(), StateMachine()]
    _both(replicas, [ops.QUEUE_DECLARE, "q", None],
          *([ops.QUEUE_PUSH, "q", v] for v in "ab"), [ops.POPPED_CHECKING])
    assert all(sm.popped.checking for sm in replicas)
    [(_, mine), (_, others)] = _both(
        replicas, _client(1, ops.QUEUE_POP_STAMPED, "q", 1),
        _client(1, ops.QUEUE_POP_STAMPED, "q", 1, session=OTHER))
    assert _both(replicas, [ops.POPPED_CHECKING]) == [None]  # a later one changes nothing
    assert _both(replicas, _client(2, CHECKED, "q", ["a"], mine)) == [None]
    for sm in replicas:
        held = sm.popped.of(OTHER)
        assert held is not None and held.count == 1
    assert _both(replicas, _client(2, CHECKED, "q", ["b"], others, session=OTHER)) == [None]
    assert all(_queue(sm) == ["b", "a"] for sm in replicas)


def test_the_leader_proposes_the_popped_checking_op_while_the_state_is_not_checking() -> None:
    sm = StateMachine()
    assert due_operations(ReadView(sm), 0, gc_topics=False) == [(ops.POPPED_CHECKING, [])]
    assert _apply(sm, [ops.POPPED_CHECKING]) == [None]
    assert due_operations(ReadView(sm), 0, gc_topics=False) == []
