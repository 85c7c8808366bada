"""What client sessions popped and did not give back is carried in the state machine's
snapshot: a replica restored from one (or that installed one) holds the same record as
one that applied the pops, admits the give-back of what they handed out and goes on
alike; a snapshot without it restores an empty record; a malformed one does not
restore."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from lazily_queue.client.popped import Giving, give_back_refusal
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.replica import check_stored_state
from lazily_queue.raft.snapshot import SnapshotError, decode_snapshot, encode_snapshot
from lazily_queue.replicated import ops, session_popped
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine

CLIENT = CLIENT_SESSION_BASE + 77
OTHER = CLIENT_SESSION_BASE + 78
KEY = "session_popped"
_members = iter(range(100, 10**6))


def _apply(sm: StateMachine, *op_list: list[Any], member: int | None = None) -> list[Any]:
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    member = next(_members) if member is None else member
    result = sm.apply(encode_command(member, 0, ops_with_seq), 1_000)
    assert isinstance(result, list)
    return result


def _client(seq: int, code: int, *args: Any, session: int = CLIENT, floor: int = 1
            ) -> list[Any]:
    return [ops.CLIENT_OP, session, seq, floor, code, *args]


def _file(state: dict[str, Any]) -> bytes:
    return encode_snapshot({"format": 1, "state": state, "last": [b"b", 9, 1],
                            "prev": [b"a", 8, 1], "members": ["1"]})


def _through_a_file(sm: StateMachine, deferred: bool = False) -> StateMachine:
    """A replica restored from ``sm``'s snapshot file, encoded and decoded."""
    restored = StateMachine()
    restored.restore(decode_snapshot(_file(sm.capture(deferred=deferred)))["state"])
    return restored


def _record(sm: StateMachine) -> list[Any]:
    """Each session's pops: seq, queue, elements held (id, value, headers)."""
    popped = sm.popped
    return [(sid, [(pop.seq, pop.name, [(i, *pop.element(i)) for i in pop.left])
                   for pop in record.pops.values()], record.count, record.bytes)
            for sid, record in popped.by_session.items()] + [popped.count, popped.bytes]


def _popping() -> StateMachine:
    """Two sessions that popped, one gave part back, one's pop result no longer kept."""
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], *([ops.QUEUE_PUSH, "q", v] for v in "abcdef"),
           [ops.QUEUE_DECLARE, "h", None], [ops.QUEUE_PUSH_HEADERS, "h", {"k": "1"}, None, "x"],
           [ops.QUEUE_PUSH_HEADERS, "h", {"k": "2"}, None, ("t", 2)])
    [(_, runs)] = _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 3))
    _apply(sm, _client(2, ops.QUEUE_UNPOP_STAMPED, "q", ["b"], [[1, 1, runs[0][2]]]))
    [(values, _, _)] = _apply(sm, _client(3, ops.QUEUE_POP_HEADERS, "h", 2))
    assert values == ["x", ("t", 2)]
    _apply(sm, _client(1, ops.QUEUE_POP_STAMPED, "q", 2, session=OTHER),
           _client(2, ops.QUEUE_POP_STAMPED, "q", 1, session=OTHER, floor=2))
    return sm


def test_a_restored_replica_holds_the_record_and_admits_the_give_back() -> None:
    sm = _popping()
    held = _record(sm)
    assert held[0][1][0][2] == [(0, "a", None), (2, "c", None)]  # b was given back
    assert held[0][1][1][2] == [(0, "x", {"k": "1"}), (1, ("t", 2), {"k": "2"})]
    for restored in (_through_a_file(sm), _through_a_file(sm, deferred=True)):
        assert _record(restored) == held
        assert restored.capture() == sm.capture()
        record = restored.popped.of(CLIENT)
        assert record is not None
        pop = record.find("q", 2)
        assert pop is not None and pop.result is restored.sessions[CLIENT].done[1]  # shared
        args = ["q", ["a", "c"], [[0, 1, 1_000], [2, 1, 1_000]]]
        code = ops.QUEUE_UNPOP_STAMPED
        assert give_back_refusal(record, Giving(), CLIENT, 9, code, args, "reader") is None
        # what a replica without the record says
        assert give_back_refusal(None, Giving(), CLIENT, 9, code, args, "reader") is not None
    # a pop result the session keeps is in the snapshot once; one it no longer keeps
    # (OTHER's first, below its floor) with the record
    part = sm.capture()[KEY]
    assert [[entry[2] is None for entry in pops] for _, pops in part] == [[True, True],
                                                                          [False, True]]


def test_a_restored_replica_goes_on_as_the_one_that_applied_the_pops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_popped, "SESSION_ELEMENTS", 4)
    monkeypatch.setattr(session_popped, "ELEMENTS", 8)
    sm = _popping()
    restored = _through_a_file(sm)
    later = [_client(4, ops.QUEUE_UNPOP_STAMPED, "q", ["a"], [[0, 1, 1_000]]),
             _client(3, ops.QUEUE_POP_STAMPED, "q", 3, session=OTHER, floor=2),
             *(_client(seq, ops.QUEUE_POP_STAMPED, "q", 1, session=CLIENT_SESSION_BASE + seq)
               for seq in range(1, 5))]
    member = next(_members)
    for replica in (sm, restored):
        _apply(replica, *([ops.QUEUE_PUSH, "q", f"more{n}"] for n in range(10)), *later,
               member=member)
    assert sm.popped.count <= 8  # shed by the bounds, alike on both
    assert _record(restored) == _record(sm)
    assert restored.capture() == sm.capture()


def test_a_snapshot_without_the_record_restores_an_empty_one() -> None:
    state = _popping().capture()
    del state[KEY]  # as a previous version wrote it
    restored = StateMachine()
    restored.restore(state)
    assert restored.popped.by_session == {} and restored.popped.count == 0
    assert KEY not in restored.capture()


def test_a_record_over_the_bounds_is_held_within_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = _popping().capture()
    monkeypatch.setattr(session_popped, "SESSION_ELEMENTS", 2)
    restored = StateMachine()
    restored.restore(state)
    # each session gave up its oldest pops, as applying them would have
    assert [sorted(r.index) for r in restored.popped.by_session.values()] == [
        [("h", 0), ("h", 1)], [("q", 4)]]
    assert restored.popped.count == 3


def _edit(state: dict[str, Any], path: tuple[int, ...], value: Any) -> None:
    target: Any = state[KEY]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


MALFORMED = [
    ((), "not a list", "must be a list"),
    ((0,), ["x"], "is not [session"),
    ((0, 0), 12, "is not a client session"),
    ((0, 0), OTHER + 1, "is not a client session"),
    ((1, 0), CLIENT, "listed twice"),
    ((0, 1), "pops", "is not [session"),
    ((0, 1, 0), [1, "q", None], "is not [seq, queue"),
    ((0, 1, 0, 0), 0, "is not [seq, queue"),
    ((0, 1, 0, 0), 7, "has no result of a pop"),
    ((0, 1, 0, 1), "", "is not [seq, queue"),
    ((0, 1, 0, 2), [["a"], [[0, 2, 1]]], "has no result of a pop"),
    ((0, 1, 0, 2), "result", "has no result of a pop"),
    ((0, 1, 0, 3), [], "is not [seq, queue"),
    ((0, 1, 0, 3), [0, 0], "element 0 once"),
    ((0, 1, 0, 3), [5], "element 5 once"),
    ((0, 1, 0, 3), [True], "element True once"),
    ((0, 1, 1, 0), 1, "lists its op 1 twice"),
]


@pytest.mark.parametrize(("path", "value", "why"), MALFORMED)
def test_a_malformed_record_does_not_restore(path: tuple[int, ...], value: Any,
                                             why: str) -> None:
    sm = _popping()
    state = sm.capture()
    if path:
        _edit(state, path, value)
    else:
        state[KEY] = value
    before = sm.capture()
    with pytest.raises(ValueError, match=re.escape(why)) as info:
        sm.validate(copy.deepcopy(state))
    assert KEY in str(info.value)
    with pytest.raises(SnapshotError, match="does not restore"):
        check_stored_state(sm, decode_snapshot(_file(state))["state"])
    assert sm.capture() == before  # nothing changed


def test_one_element_held_by_two_pops_does_not_restore() -> None:
    state = _popping().capture()
    [_, pops] = state[KEY][0]
    pops[1][1] = "q"  # the headers pop, as if of queue q: element 0 twice
    pops[1][3] = [0]
    with pytest.raises(ValueError, match="element 0 of queue 'q' twice"):
        StateMachine().restore(state)
