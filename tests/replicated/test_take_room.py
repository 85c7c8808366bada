"""A client's takes and claims in the sized form (its floor negated) are held to the room
its session's kept results leave: several applied before any is answered never give up
one another's result, each sent again is answered with its own elements (leases), and
one for which the room holds not even one element takes nothing and answers ``no_room``.
The old form (a floor not negated) keeps its old meaning."""

from __future__ import annotations

from typing import Any

from lazily_queue.replicated import ops
from lazily_queue.replicated.events import OpApplied
from lazily_queue.replicated.session_results import NOT_KEPT, SESSION_KEPT_BYTES
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from lazily_queue.replicated.take_bytes import NO_ROOM, TakeBudget, room_of
from tests.replicated.test_take_bytes import apply_as_member

CLIENT = CLIENT_SESSION_BASE + 93
LARGE = b"x" * 900_000
#: About what three full takes of LARGE values come to: past the session's bound.
FULL = 4


def _client_op(sm: StateMachine, seq: int, floor: int, code: int, *args: Any) -> Any:
    [result] = apply_as_member(sm, [ops.CLIENT_OP, CLIENT, seq, floor, code, *args])
    return result


def _queue(n: int = 40) -> StateMachine:
    sm = StateMachine()
    apply_as_member(sm, [ops.QUEUE_DECLARE, "q", None])
    apply_as_member(sm, *([ops.QUEUE_PUSH, "q", LARGE + bytes([i])] for i in range(n)))
    return sm


def _work(n: int = 40) -> StateMachine:
    sm = StateMachine()
    apply_as_member(sm, [ops.WORK_DECLARE, "w", 30_000, 3])
    apply_as_member(sm, *([ops.WORK_PUSH, "w", LARGE + bytes([i])] for i in range(n)))
    return sm


def _pop(sm: StateMachine, seq: int, floor: int) -> Any:
    return _client_op(sm, seq, floor, ops.QUEUE_POP_STAMPED, "q", 256)


def _claim(sm: StateMachine, seq: int, floor: int) -> Any:
    return _client_op(sm, seq, floor, ops.WORK_CLAIM_MANY, "w", "a", 256, None)


def _values(result: Any) -> list[bytes]:
    return [v[-1:] for v in result[0]] if result and isinstance(result[0][0], bytes) else [
        d["value"][-1:] for d in result[0]]


def test_takes_in_flight_together_never_give_up_each_others_results() -> None:
    sm = _queue()
    first, second, third = (_pop(sm, seq, -1) for seq in (1, 2, 3))  # none answered yet
    assert len(first[0]) == len(second[0]) == FULL
    assert 1 <= len(third[0]) < FULL  # what the room its session had left holds
    fourth = _pop(sm, 4, -1)
    assert fourth == NO_ROOM  # nothing taken
    assert sm.queues["q"].len() == 40 - 2 * FULL - len(third[0])
    for seq, kept in ((1, first), (2, second), (3, third), (4, NO_ROOM)):
        assert _pop(sm, seq, -1) == kept  # each retry: its own elements
    taken = [v for r in (first, second, third) for v in _values(r)]
    assert taken == [bytes([i]) for i in range(len(taken))]  # in order, each once
    # Its earlier takes answered, the one that found no room goes again under a new seq.
    again = _pop(sm, 5, -5)
    assert len(again[0]) == FULL and _values(again)[0] == bytes([len(taken)])


def test_claims_in_flight_together_never_give_up_each_others_leases() -> None:
    sm = _work()
    first, second, third = (_claim(sm, seq, -1) for seq in (1, 2, 3))
    assert len(first[0]) == len(second[0]) == FULL
    assert 1 <= len(third[0]) < FULL
    assert _claim(sm, 4, -1) == NO_ROOM
    assert sm.work_queues["w"].core.in_flight_len() == 2 * FULL + len(third[0])
    for seq, kept in ((1, first), (2, second), (3, third)):
        assert _claim(sm, seq, -1) == kept
    assert len(_claim(sm, 5, -5)[0]) == FULL


def test_the_old_form_keeps_its_meaning_the_third_full_take_gives_up_the_first() -> None:
    sm = _queue()
    first, second, third = (_pop(sm, seq, 1) for seq in (1, 2, 3))
    assert len(first[0]) == len(second[0]) == len(third[0]) == FULL
    assert _pop(sm, 1, 1) == NOT_KEPT


def test_an_element_past_the_room_waits_for_it_and_goes_alone_once_nothing_is_kept(
) -> None:
    sm = StateMachine()
    apply_as_member(sm, [ops.QUEUE_DECLARE, "q", None])
    apply_as_member(sm, [ops.QUEUE_PUSH, "q", b"s"],
                    [ops.QUEUE_PUSH, "q", b"x" * (SESSION_KEPT_BYTES - 1024)])
    small = _pop(sm, 1, -1)
    assert small[0] == [b"s"]
    assert _pop(sm, 2, -1) == NO_ROOM  # the first's result is still kept
    assert len(_pop(sm, 3, -3)[0][0]) == SESSION_KEPT_BYTES - 1024  # its room whole


def test_the_first_element_goes_whatever_its_size_only_when_the_room_is_whole() -> None:
    huge = b"x" * (SESSION_KEPT_BYTES + 1)
    whole = TakeBudget(0, SESSION_KEPT_BYTES)
    assert whole([huge, b"y"]) == 1 and not whole.short  # answered, not kept
    short = TakeBudget(0, SESSION_KEPT_BYTES - 1)
    assert short([huge]) == 0 and short.short
    assert TakeBudget(0)([huge, b"y"]) == 1  # the old form


def test_the_room_is_what_the_sessions_kept_results_leave() -> None:
    sm = _queue(4)
    _pop(sm, 1, -1)
    session = sm.sessions[CLIENT]
    assert room_of(session) == SESSION_KEPT_BYTES - session.kept_bytes < SESSION_KEPT_BYTES
    _client_op(sm, 2, -2, ops.QUEUE_DECLARE, "other", None)  # the floor passes the take
    assert room_of(session) == SESSION_KEPT_BYTES


def _mirrored(make: Any, tapped: tuple[str, str], *takes: Any) -> None:
    """The ops of sized ``takes`` on ``make()``'s state, as its watchers replay them on
    a mirror of it, leave the mirror as the member."""
    member, mirror = make(), make()
    member.tap = {tapped}
    member.drain_events()
    for take in takes:
        take(member)
    for event in member.drain_events():
        if isinstance(event, OpApplied):
            mirror.replay(event.now, event.op)
    assert mirror.capture()[tapped[0] + "s"] == member.capture()[tapped[0] + "s"]


def test_a_mirror_replaying_sized_takes_takes_what_they_took() -> None:
    _mirrored(_queue, ("queue", "q"),
              *(lambda sm, s=seq: _pop(sm, s, -1) for seq in range(1, 5)),
              lambda sm: _pop(sm, 5, -5))


def test_a_mirror_replaying_sized_claims_leases_what_they_leased() -> None:
    _mirrored(_work, ("work_queue", "w"),
              *(lambda sm, s=seq: _claim(sm, s, -1) for seq in range(1, 5)),
              lambda sm: _claim(sm, 5, -5))


def test_a_sized_claim_of_nothing_is_replayed_as_proposed() -> None:
    sm = _work(0)
    sm.tap = {("work_queue", "w")}
    assert _claim(sm, 1, -1)[0] == []
    [replayed] = [e.op for e in sm.drain_events() if isinstance(e, OpApplied)]
    assert replayed == [ops.WORK_CLAIM_MANY, "w", "a", 256, None]
