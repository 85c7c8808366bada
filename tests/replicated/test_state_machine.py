"""The replicated state machine reports typed events and is read through a ReadView."""

from __future__ import annotations

from typing import Any

from lazily_queue.core.queue import CLOSE, POP, PUSH, UNPOP
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.events import (
    MemberAddressed,
    QueueChanged,
    QueueDeclared,
    Restored,
    TopicChanged,
    WorkQueueChanged,
)
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.view import ReadView


def _apply(sm: StateMachine, *op_list: list[Any], stamp: int = 1_000) -> list[Any]:
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(1, 0, ops_with_seq), stamp)
    assert isinstance(result, list)
    return result


def test_queue_transitions_are_typed_events() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", 2], [ops.QUEUE_PUSH, "q", "a"],
           [ops.QUEUE_PUSH, "q", "b"], [ops.QUEUE_POP, "q"], [ops.QUEUE_UNPOP, "q", "a"],
           [ops.QUEUE_CLOSE, "q"])
    assert sm.drain_events() == [
        QueueDeclared("q", 2), QueueChanged("q", PUSH, 0), QueueChanged("q", PUSH, 1),
        QueueChanged("q", POP, 2), QueueChanged("q", UNPOP, 1), QueueChanged("q", CLOSE, 2),
    ]
    assert sm.drain_events() == []


def test_topic_work_and_cluster_events() -> None:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE, "t"], [ops.TOPIC_SUBSCRIBE, "t", "s1", "durable"],
           [ops.TOPIC_PUBLISH, "t", "x"], [ops.WORK_DECLARE, "w", 30_000, 3],
           [ops.WORK_PUSH, "w", "job"], [ops.MEMBER_ADDRESS, 4, "unix:///run/4.sock"])
    events = sm.drain_events()
    assert TopicChanged("t", frozenset({"s1"})) in events
    assert any(isinstance(e, WorkQueueChanged) and e.name == "w" and e.mask for e in events)
    assert events[-1] == MemberAddressed("4", "unix:///run/4.sock")


def test_a_restore_reports_restored_and_the_view_follows_it() -> None:
    source = StateMachine()
    _apply(source, [ops.QUEUE_DECLARE, "q", None], [ops.QUEUE_PUSH, "q", "kept"],
           [ops.MEMBER_ADDRESS, "2", "tcp://h:1"], stamp=42)
    target = StateMachine()
    view = ReadView(target)
    assert view.queue("q") is None
    target.restore(source.capture())
    assert target.drain_events() == [Restored()]
    queue = view.queue("q")
    assert queue is not None and queue.elements() == ["kept"]
    assert view.address("2") == "tcp://h:1" and view.now == 42
    assert view.capture() == source.capture()


def test_a_retried_op_applies_once_and_the_view_counts_it() -> None:
    sm = StateMachine()
    view = ReadView(sm)
    batch = encode_command(9, 0, [[1, ops.QUEUE_DECLARE, "q", None], [2, ops.QUEUE_PUSH, "q", 1]])
    first = sm.apply(batch, 1)
    assert sm.apply(batch, 2) == first
    assert view.duplicate_ops == 2 and view.applied_ops == 2
    queue = view.queue("q")
    assert queue is not None and queue.elements() == [1]


def test_forgetting_an_address_drops_only_the_address_it_names() -> None:
    """A removed member's address is forgotten by value: if a later ``add_member``
    replicated another address for that id first, the new one stays."""
    sm = StateMachine()
    view = ReadView(sm)
    sessions = iter(range(100, 200))

    def apply(*op_list: list[Any]) -> None:
        ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
        sm.apply(encode_command(next(sessions), 0, ops_with_seq), 1_000)

    apply([ops.MEMBER_ADDRESS, "4", "tcp://old:1"], [ops.MEMBER_ADDRESS, "4", "tcp://new:1"],
          [ops.MEMBER_FORGET, "4", "tcp://old:1"])
    assert view.address("4") == "tcp://new:1"
    apply([ops.MEMBER_FORGET, "4", "tcp://new:1"])
    assert view.address("4") is None
    apply([ops.MEMBER_ADDRESS, "5", "tcp://a:1"], [ops.MEMBER_FORGET, "5"])
    assert view.address("5") is None  # without an address: whatever it holds
