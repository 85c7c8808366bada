"""QUEUE_PUSH_OPTIONS and QUEUE_PROMOTE in the state machine: every option combines on
one element, the options map is decoded strictly, delayed elements fall due in (due,
commit) order at a pop or a promotion, limits and transactions take them, snapshots and
mirrors keep them, and the leader's maintenance proposes the promotion."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.maintenance import due_operations
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.view import ReadView

from .apply import apply_fresh as _apply


def _declared(*extra: list[Any]) -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], *extra)
    return sm


def test_every_option_combines_on_one_element() -> None:
    sm = _declared()
    options = {"msg_id": "m", "headers": {"k": "v"}, "ttl_ms": 5_000, "delay_ms": 1_000}
    first, repeat = _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", options, "a"],
                           [ops.QUEUE_PUSH_OPTIONS, "q", options, "a"], stamp=10_000)
    assert first is None and repeat is None
    q = sm.queues["q"]
    assert (q.len(), q.delayed_len(), q.next_due()) == (0, 1, 11_000)  # one, not two
    assert _apply(sm, [ops.QUEUE_POP_HEADERS, "q", 1], stamp=10_999) == [QueuePopError.Empty]
    [popped] = _apply(sm, [ops.QUEUE_POP_HEADERS, "q", 1], stamp=11_000)
    assert popped == [["a"], [[0, 1, 10_000]], [[0, {"k": "v"}]]]
    assert sm.expiry[("queue", "q")].taken[0] == 15_000  # deadline: push stamp + ttl


def test_a_delayed_element_past_its_ttl_expires_instead_of_being_delivered() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"ttl_ms": 100, "delay_ms": 500}, "stale"],
           stamp=1_000)
    assert _apply(sm, [ops.QUEUE_POP, "q"], stamp=2_000) == [QueuePopError.Empty]
    assert sm.expiry[("queue", "q")].expired == 1


@pytest.mark.parametrize("options", [
    {"delay": 5}, {"ttl_ms": "5"}, {"ttl_ms": 0}, {"headers": {}}, {"msg_id": ""},
    {"delay_ms": -1}, {"delay_ms": 1, "not_before_ms": 2}, [], None, {"msg_id": 5},
])
def test_a_bad_options_map_is_refused_and_applies_nothing(options: Any) -> None:
    sm = _declared()
    [result] = _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", options, "a"])
    assert isinstance(result, OpError) and result.code == "bad_options", result
    q = sm.queues["q"]
    assert (q.len(), q.delayed_len(), q.next_id()) == (0, 0, 0)


def test_due_elements_join_in_due_then_commit_order() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 300}, "late"],
           [ops.QUEUE_PUSH_OPTIONS, "q", {"not_before_ms": 1_100}, "early"],
           [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100}, "early-too"],
           [ops.QUEUE_PUSH, "q", "ready"], stamp=1_000)
    assert _apply(sm, [ops.QUEUE_PROMOTE, "q"], stamp=1_050) == [0]
    assert _apply(sm, [ops.QUEUE_PROMOTE, "q"], stamp=1_500) == [3]
    assert sm.queues["q"].elements() == ["ready", "early", "early-too", "late"]
    assert [r[0] for r in sm.queues["q"].id_state()[1]] == [3, 1, 0]  # ids kept


def test_a_closed_queue_still_delivers_its_delayed_elements() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100}, "a"], [ops.QUEUE_CLOSE, "q"])
    assert _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 1}, "b"]) == [
        QueuePushError.Closed]
    assert _apply(sm, [ops.QUEUE_POP, "q"], stamp=1_050) == [QueuePopError.Empty]
    assert _apply(sm, [ops.QUEUE_POP, "q"], [ops.QUEUE_POP, "q"], stamp=1_100) == [
        "a", QueuePopError.Closed]


def test_limits_check_a_delayed_push_and_make_room_when_it_falls_due() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "r", [1, None, "reject"]],
           [ops.QUEUE_DECLARE_LIMITED, "d", [1, None, "drop_oldest"]],
           [ops.QUEUE_PUSH, "r", "x"], [ops.QUEUE_PUSH, "d", "x"])
    assert _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "r", {"delay_ms": 10}, "y"]) == [
        QueuePushError.Full]
    assert _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "d", {"delay_ms": 10, "headers": {"h": "1"}},
                       "y"]) == [None]
    _apply(sm, [ops.QUEUE_PROMOTE, "d"], stamp=1_010)
    d = sm.queues["d"]
    assert d.elements() == ["y"] and d.quota.dropped == {"drop_oldest": 1}  # type: ignore[attr-defined]
    assert d.headers_state() == [[1, {"h": "1"}]]


def test_under_reject_delayed_elements_count_against_the_limits() -> None:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "r", [2, None, "reject"]], [ops.QUEUE_PUSH, "r", "x"])
    delayed = [ops.QUEUE_PUSH_OPTIONS, "r", {"delay_ms": 10}, "y"]
    assert _apply(sm, delayed, delayed, [ops.QUEUE_PUSH, "r", "z"]) == [
        None, QueuePushError.Full, QueuePushError.Full]
    assert _apply(sm, [ops.QUEUE_POP, "r"], stamp=1_010) == ["x"]
    assert sm.queues["r"].elements() == ["y"]


@pytest.mark.parametrize("args", [[], ["q", None], ["q", 5_000], ["q", 1, 2], [5]])
def test_a_promotion_carries_only_the_queue_name(args: list[Any]) -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100}, "a"], stamp=1_000)
    [result] = _apply(sm, [ops.QUEUE_PROMOTE, *args], stamp=1_000)
    assert isinstance(result, OpError) and result.code in ("bad_args", "bad_name"), result
    q = sm.queues["q"]
    assert (q.len(), q.delayed_len()) == (0, 1)


def test_a_transaction_carries_a_push_with_options_all_or_none() -> None:
    sm = _declared([ops.QUEUE_DECLARE, "p", 1])
    _apply(sm, [ops.QUEUE_PUSH, "p", "full"])
    push = [ops.QUEUE_PUSH_OPTIONS, "q", {"msg_id": "t", "ttl_ms": 1_000, "delay_ms": 5}, "a"]
    [aborted] = _apply(sm, [ops.TXN, push, [ops.QUEUE_PUSH, "p", "b"]])
    assert aborted[0] is False and sm.queues["q"].delayed_len() == 0
    [done] = _apply(sm, [ops.TXN, push, push])
    assert done == [True, [None, None]] and sm.queues["q"].delayed_len() == 1
    [bad] = _apply(sm, [ops.TXN, [ops.QUEUE_PUSH_OPTIONS, "q", {"nope": 1}, "a"]])
    assert bad[0] is False and bad[2] == "bad_options"


def test_snapshots_and_mirrors_keep_delayed_elements_and_their_headers() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH, "q", "ready"],
           [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100, "headers": {"k": "v"}}, "later"])
    doc = sm.capture()
    assert doc["queue_options"] == {"q": [[1_100, 1, 1_000, "later"]]}
    again = StateMachine()
    again.restore(doc)
    mirror = StateMachine()
    objects.install(mirror, "queue", "q", objects.capture(sm, "queue", "q"))
    for copy in (again, mirror):
        q = copy.queues["q"]
        assert (q.elements(), q.delayed_len(), q.headers_state()) == (
            ["ready"], 1, [[1, {"k": "v"}]])
    bad = sm.capture()
    bad["queue_options"]["q"][0][1] = 7  # an id the queue never gave
    with pytest.raises(ValueError, match="queue_options"):
        StateMachine().validate(bad)


def test_maintenance_proposes_a_promotion_once_an_element_is_due() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_OPTIONS, "q", {"delay_ms": 100}, "a"], stamp=1_000)
    view = ReadView(sm)
    assert (ops.QUEUE_PROMOTE, ["q"]) not in due_operations(view, 1_050,
                                                                   gc_topics=False)
    assert (ops.QUEUE_PROMOTE, ["q"]) in due_operations(view, 1_100, gc_topics=False)
