"""Administration ops: purge and delete each kind of object, and members' page addresses."""

from __future__ import annotations

from typing import Any

from lazily_queue.core.queue import RESET
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.events import Deleted, QueueChanged, TopicChanged, WorkQueueChanged
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

_seq = iter(range(1, 1_000_000))


def _apply(sm: StateMachine, *op_list: list[Any], stamp: int = 1_000) -> list[Any]:
    result = sm.apply(encode_command(1, 0, [[next(_seq), *op] for op in op_list]), stamp)
    assert isinstance(result, list)
    return result


def test_purging_a_queue_keeps_it_declared_and_reports_a_reset() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", 5], [ops.QUEUE_PUSH, "q", "a"],
           [ops.QUEUE_PUSH, "q", "b"], [ops.QUEUE_CLOSE, "q"])
    sm.drain_events()
    assert _apply(sm, [ops.QUEUE_PURGE, "q"]) == [2]
    assert sm.drain_events() == [QueueChanged("q", RESET, 2)]
    q = sm.queues["q"]
    assert (q.len(), q.capacity(), q.is_closed()) == (0, 5, True)
    assert _apply(sm, [ops.QUEUE_PURGE, "q"]) == [0]
    assert sm.drain_events() == []
    refused = _apply(sm, [ops.QUEUE_PURGE, "nope"])[0]
    assert isinstance(refused, OpError) and refused.code == "unknown_queue"


def test_deleting_each_kind_forgets_it_and_reports_deleted() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.QUEUE_PUSH, "q", 1],
           [ops.TOPIC_DECLARE, "t"], [ops.TOPIC_SUBSCRIBE, "t", "s", "durable"],
           [ops.TOPIC_PUBLISH, "t", "x"], [ops.WORK_DECLARE, "w", 1000, 1],
           [ops.WORK_PUSH, "w", "a"], [ops.WORK_PUSH, "w", "b"], [ops.WORK_CLAIM, "w", "k", None])
    sm.drain_events()
    assert _apply(sm, [ops.QUEUE_DELETE, "q"], [ops.TOPIC_DELETE, "t"],
                  [ops.WORK_DELETE, "w"]) == [1, 1, 2]
    events = sm.drain_events()
    assert Deleted("queue", "q") in events and Deleted("topic", "t") in events
    assert Deleted("work_queue", "w") in events
    assert TopicChanged("t", frozenset({"s"})) in events
    assert any(isinstance(e, WorkQueueChanged) and e.name == "w" for e in events)
    assert not sm.queues and not sm.topics and not sm.work_queues
    again = _apply(sm, [ops.QUEUE_DELETE, "q"], [ops.TOPIC_DELETE, "t"], [ops.WORK_DELETE, "w"])
    assert [e.code for e in again] == ["unknown_queue", "unknown_topic", "unknown_work_queue"]
    # The name can be declared again, empty and with new settings.
    _apply(sm, [ops.WORK_DECLARE, "w", 5000, 3])
    assert sm.work_queues["w"].core.pending_len() == 0


def test_work_purge_drops_pending_or_dead_letters_and_keeps_leases() -> None:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 1000, 1], *([ops.WORK_PUSH, "w", i] for i in range(4)))
    claimed = _apply(sm, [ops.WORK_CLAIM, "w", "k", None], [ops.WORK_CLAIM, "w", "k", None])
    _apply(sm, [ops.WORK_NACK, "w", "k", claimed[0][0]["delivery_id"]])  # max 1: dead
    core = sm.work_queues["w"].core
    assert (core.pending_len(), core.in_flight_len(), core.dead_letter_len()) == (2, 1, 1)
    assert _apply(sm, [ops.WORK_PURGE, "w", False]) == [2]
    assert (core.pending_len(), core.in_flight_len(), core.dead_letter_len()) == (0, 1, 1)
    assert _apply(sm, [ops.WORK_PURGE, "w", True]) == [1]
    assert (core.pending_len(), core.in_flight_len(), core.dead_letter_len()) == (0, 1, 0)
    assert core.next_ids()[0] == 4  # ids are never reused


def test_work_purge_forgets_the_deadlines_of_the_items_it_drops() -> None:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 60_000, 3])
    for _ in range(3):  # purged again and again, nothing of the dropped items stays
        _apply(sm, *([ops.WORK_PUSH_TTL, "w", 500, i] for i in range(100)))
        assert _apply(sm, [ops.WORK_PURGE, "w", False]) == [100]
        assert sm.expiry[("work_queue", "w")].held_deadlines() == {}
    _apply(sm, [ops.WORK_PUSH_TTL, "w", 500, "after"], stamp=2_000)
    assert sm.expiry[("work_queue", "w")].held_deadlines() == {300: 2_500}


def test_member_pages_are_replicated_validated_and_snapshotted() -> None:
    sm = StateMachine()
    assert "member_pages" not in sm.capture()  # snapshots are unchanged until one is set
    _apply(sm, [ops.MEMBER_PAGE, "1", "http://10.0.0.1:8101"],
           [ops.MEMBER_PAGE, 2, "https://q2.example/"])
    bad = _apply(sm, [ops.MEMBER_PAGE, "3", "javascript:alert(1)"],
                 [ops.MEMBER_PAGE, "3", "http://" + "x" * 600])
    assert [e.code for e in bad] == ["bad_url", "bad_url"]
    assert sm.member_pages == {"1": "http://10.0.0.1:8101", "2": "https://q2.example/"}
    copy = StateMachine()
    copy.restore(sm.capture())
    assert copy.member_pages == sm.member_pages
    _apply(sm, [ops.MEMBER_PAGE, "1", None])
    assert sm.member_pages == {"2": "https://q2.example/"}
    older = sm.capture()
    del older["member_pages"]  # a snapshot of a version without pages
    copy.restore(older)
    assert copy.member_pages == {}
