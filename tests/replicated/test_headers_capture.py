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
