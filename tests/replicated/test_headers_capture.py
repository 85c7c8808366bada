"""A snapshot's headers section among many queues: only the queues holding headers are
read, and it lists exactly the headers of the elements still queued."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.fifo import Fifo
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def test_the_capture_reads_the_headers_of_only_the_queues_holding_some(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sm = StateMachine()
    _apply(sm, *([ops.QUEUE_DECLARE, f"q{i}", None] for i in range(50)))
    _apply(sm, [ops.QUEUE_PUSH_HEADERS, "q1", {"k": "v"}, None, "a"],
           [ops.QUEUE_PUSH_HEADERS, "q2", {"k": "w"}, None, "b"], [ops.QUEUE_POP, "q2"])
    read: list[Any] = []
    state = Fifo.headers_state

    def counted(self: Fifo[Any]) -> list[list[Any]]:
        read.append(self)
        return state(self)

    monkeypatch.setattr(Fifo, "headers_state", counted)
    doc = sm.capture()
    assert doc["headers"] == {"queues": {"q1": [[0, {"k": "v"}]]}}
    assert read == [sm.queues["q1"]]  # q2's header left with its pop


def test_the_capture_only_reads_the_header_tables() -> None:
    """The capture runs in slices over the live tables, the event loop going on between
    them: it leaves out the headers of items gone and of deleted work queues and topics
    without dropping them from the tables, which applying ops prunes."""
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 30_000, 5], [ops.WORK_DECLARE, "gone", 30_000, 5],
           [ops.TOPIC_DECLARE, "t"])
    _apply(sm, [ops.WORK_PUSH_HEADERS, "w", {"k": "a"}, None, "a"],
           [ops.WORK_PUSH_HEADERS, "w", {"k": "b"}, None, "b"],
           [ops.WORK_PUSH_HEADERS, "gone", {"k": "c"}, None, "c"],
           [ops.TOPIC_PUBLISH_HEADERS, "t", {"k": "d"}, None, "d"])
    [[delivery, _value]] = _apply(sm, [ops.WORK_CLAIM, "w", "worker", None])
    _apply(sm, [ops.WORK_ACK, "w", "worker", delivery["delivery_id"]],
           [ops.WORK_DELETE, "gone"], [ops.TOPIC_DELETE, "t"])
    tables = {name: len(table) for name, table in sm.work_headers.items()}
    topic_tables = {name: len(table) for name, table in sm.topic_headers.items()}
    doc = sm.capture()
    assert doc["headers"] == {"work_queues": {"w": [[1, {"k": "b"}]]}}
    assert {name: len(table) for name, table in sm.work_headers.items()} == tables
    assert {name: len(table) for name, table in sm.topic_headers.items()} == topic_tables
    assert tables == {"w": 2, "gone": 1} and topic_tables == {"t": 1}
