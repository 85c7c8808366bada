"""Message headers beside queue limits and expiry in the replicated state machine: a
queue with limits keeps the headers of a push (directly and in a transaction); a pop
with headers honours expiry and still returns the headers of what it took; a limited
queue takes an element back at the head with the entry's stamp."""

from __future__ import annotations

from typing import Any

from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _code(result: Any) -> str:
    assert isinstance(result, OpError), result
    return result.code


def test_a_queue_with_limits_keeps_the_headers_of_a_push() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", [1, None, "drop_oldest"]])
    _apply(sm, [ops.QUEUE_PUSH_HEADERS, "q", {"k": "v"}, None, "a"],
           [ops.QUEUE_PUSH_HEADERS, "q", {"k": "w"}, None, "b"])
    assert sm.queues["q"].elements() == ["b"]
    assert sm.queues["q"].headers_state() == [[1, {"k": "w"}]]  # a's left with it


def test_a_transaction_pushes_with_headers_to_a_limited_queue() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", [1, None, "reject"]],
           [ops.QUEUE_DECLARE, "p", None])
    [result] = _apply(sm, [ops.TXN, [ops.QUEUE_PUSH, "p", "x"],
                           [ops.QUEUE_PUSH_HEADERS, "q", {"k": "v"}, None, "a"]])
    assert result[0] is True
    assert sm.queues["p"].elements() == ["x"] and sm.queues["q"].elements() == ["a"]
    [full] = _apply(sm, [ops.TXN, [ops.QUEUE_PUSH, "p", "y"],
                         [ops.QUEUE_PUSH_HEADERS, "q", {"k": "v"}, None, "b"]])
    assert full[0] is False and full[2] == "full"  # all or none: p keeps only x
    assert sm.queues["p"].elements() == ["x"]


def test_a_pop_with_headers_skips_expired_elements_and_keeps_live_headers() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None])
    _apply(sm, [ops.QUEUE_PUSH_TTL, "q", 100, "short"],
           [ops.QUEUE_PUSH_HEADERS, "q", {"k": "v"}, None, "kept"], stamp=1_000)
    [popped] = _apply(sm, [ops.QUEUE_POP_HEADERS, "q", 5], stamp=1_200)
    assert popped == [["kept"], [[1, 1, 1_000]], [[1, {"k": "v"}]]]
    assert sm.expiry[("queue", "q")].expired == 1


def test_a_default_ttl_applies_to_elements_pushed_with_headers() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.EXPIRY_RULES, "q", "queue", 500, None])
    _apply(sm, [ops.QUEUE_PUSH_HEADERS, "q", {"k": "v"}, None, "old"], stamp=1_000)
    _apply(sm, [ops.QUEUE_PUSH_HEADERS, "q", {"k": "w"}, None, "new"], stamp=1_400)
    [popped] = _apply(sm, [ops.QUEUE_POP_HEADERS, "q", 5], stamp=1_600)
    assert popped[0] == ["new"] and popped[2] == [[1, {"k": "w"}]]
    assert sm.queues["q"].headers_state() == []


def test_a_limited_queue_takes_an_element_back_with_the_entry_stamp() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", [3, None, "reject"]])
    _apply(sm, [ops.QUEUE_PUSH, "q", "a"])
    _apply(sm, [ops.QUEUE_POP, "q"])
    assert _apply(sm, [ops.QUEUE_UNPOP, "q", "a"], stamp=7_000) == [None]
    assert sm.queues["q"].elements() == ["a"]
    assert sm.queues["q"].id_state()[1][0][2] == 7_000
