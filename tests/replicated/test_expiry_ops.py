"""Message expiry in the replicated state machine: decided by entry stamps only."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.queue import QueuePopError
from lazily_queue.replicated import ops
from lazily_queue.replicated.events import Expired
from lazily_queue.replicated.expiry import EXPIRE_LIMIT
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _declared() -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.TOPIC_DECLARE, "t"],
           [ops.WORK_DECLARE, "w", 30_000, 3])
    return sm


def _expired(sm: StateMachine) -> list[Expired]:
    return [e for e in sm.drain_events() if isinstance(e, Expired)]


def test_a_per_message_ttl_is_never_popped_after_its_deadline() -> None:
    sm = _declared()
    assert _apply(sm, [ops.QUEUE_PUSH_TTL, "q", 500, "short"], [ops.QUEUE_PUSH, "q", "plain"],
                  stamp=1_000) == [None, None]
    sm.drain_events()
    # No sweep ran: the pop's own stamp decides.
    assert _apply(sm, [ops.QUEUE_POP, "q"], stamp=1_500) == ["plain"]
    assert _expired(sm) == [Expired("queue", "q", 1)]
    assert sm.expiry[("queue", "q")].expired == 1
    assert sm.queues["q"].len() == 0


def test_an_element_is_live_until_its_deadline() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_TTL, "q", 500, "a"], stamp=1_000)
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 5], stamp=1_499) == [
        [["a"], [[0, 1, 1_000]]]]


def test_a_default_ttl_expires_in_fifo_order_at_a_sweep() -> None:
    sm = _declared()
    assert _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 1_000, None]) == [None]
    _apply(sm, [ops.QUEUE_PUSH, "q", "a"], [ops.QUEUE_PUSH, "q", "b"], stamp=1_000)
    _apply(sm, [ops.QUEUE_PUSH, "q", "c"], stamp=1_800)
    assert _apply(sm, [ops.EXPIRE, "q", "queue"], stamp=2_000) == [2]
    assert sm.queues["q"].elements() == ["c"]
    assert _apply(sm, [ops.QUEUE_POP_MANY, "q", 10], stamp=2_799) == [["c"]]


def test_pop_many_skips_an_expired_element_behind_a_live_head() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH, "q", "a"], [ops.QUEUE_PUSH_TTL, "q", 10, "b"],
           [ops.QUEUE_PUSH, "q", "c"], stamp=1_000)
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 3], stamp=2_000) == [
        [["a", "c"], [[0, 1, 1_000], [2, 1, 1_000]]]]
    assert _apply(sm, [ops.QUEUE_POP, "q"], stamp=2_000) == [QueuePopError.Empty]


def test_an_element_given_back_keeps_its_deadline() -> None:
    sm = _declared()
    _apply(sm, [ops.QUEUE_PUSH_TTL, "q", 500, "a"], stamp=1_000)
    [[values, runs]] = _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 1], stamp=1_100)
    _apply(sm, [ops.QUEUE_UNPOP_STAMPED, "q", values, runs], stamp=1_200)
    assert _apply(sm, [ops.QUEUE_POP, "q"], stamp=1_600) == [QueuePopError.Empty]
    assert sm.expiry[("queue", "q")].expired == 1


def test_a_work_item_expires_only_while_it_waits_for_its_first_delivery() -> None:
    sm = _declared()
    _apply(sm, [ops.EXPIRY_RULES, "w", "work_queue", 1_000, None])
    _apply(sm, [ops.WORK_PUSH, "w", "a"], [ops.WORK_PUSH_TTL, "w", 100, "b"],
           [ops.WORK_PUSH, "w", "c"], stamp=1_000)
    [[delivery, _]] = _apply(sm, [ops.WORK_CLAIM, "w", "x", None], stamp=1_050)
    assert delivery["value"] == "a"
    # "b" expired at 1_100; the lease of "a" (to 31_050) does not expire with its TTL.
    [[deliveries, _]] = _apply(sm, [ops.WORK_CLAIM_MANY, "w", "y", 5, None], stamp=1_500)
    assert [d["value"] for d in deliveries] == ["c"]
    assert sm.expiry[("work_queue", "w")].expired == 1
    # Back from a nack after its default TTL passed: still claimable (it was delivered).
    _apply(sm, [ops.WORK_NACK, "w", "x", delivery["delivery_id"]], stamp=5_000)
    [[again, _]] = _apply(sm, [ops.WORK_CLAIM, "w", "x", None], stamp=5_000)
    assert again["value"] == "a" and again["attempt"] == 2


def test_topic_retention_by_age_moves_durable_cursors_and_counts_the_gap() -> None:
    sm = _declared()
    _apply(sm, [ops.EXPIRY_RULES, "t", "topic", None, 1_000],
           [ops.TOPIC_SUBSCRIBE, "t", "d", "durable"])
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "a"], [ops.TOPIC_PUBLISH, "t", "b"], stamp=1_000)
    _apply(sm, [ops.TOPIC_DISCONNECT, "t", "d"])
    sm.drain_events()
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "c"], stamp=2_500)
    topic = sm.topics["t"]
    assert (topic.base_offset(), topic.elements()) == (2, ["c"])
    assert topic.cursor("d") == 2
    assert _expired(sm) == [Expired("topic", "t", 2, 2)]


def test_gc_and_sweeps_apply_the_age_limit_too() -> None:
    sm = _declared()
    _apply(sm, [ops.EXPIRY_RULES, "t", "topic", None, 1_000],
           [ops.TOPIC_SUBSCRIBE, "t", "d", "durable"])
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "a"], stamp=1_000)
    assert _apply(sm, [ops.EXPIRE, "t", "topic"], stamp=1_999) == [0]
    assert _apply(sm, [ops.EXPIRE, "t", "topic"], stamp=2_000) == [1]
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "b"], stamp=3_000)
    assert _apply(sm, [ops.TOPIC_GC, "t"], stamp=4_000) == [1]
    assert sm.topics["t"].elements() == []


@pytest.mark.parametrize("op", [
    [ops.QUEUE_PUSH_TTL, "q", 0, "v"],
    [ops.QUEUE_PUSH_TTL, "q", -5, "v"],
    [ops.QUEUE_PUSH_TTL, "q", 1.5, "v"],
    [ops.QUEUE_PUSH_TTL, "q", None, "v"],
    [ops.WORK_PUSH_TTL, "w", True, "v"],
    [ops.EXPIRY_RULES, "q", "queue", "1", None],
    [ops.EXPIRY_RULES, "q", "queue", None, 1_000],
    [ops.EXPIRY_RULES, "q", "nope", None, None],
    [ops.EXPIRY_RULES, "zz", "queue", 5, None],
])
def test_bad_expiry_ops_are_refused_and_change_nothing(op: list[Any]) -> None:
    sm = _declared()
    [result] = _apply(sm, op)
    assert isinstance(result, OpError)
    assert sm.queues["q"].len() == 0 and sm.work_queues["w"].core.pending_len() == 0
    assert sm.expiry == {}


def test_rules_are_set_once_and_a_mismatch_is_refused() -> None:
    sm = _declared()
    assert _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 1_000, None]) == [None]
    assert _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 1_000, None]) == [None]
    [refused] = _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 2_000, None])
    assert isinstance(refused, OpError) and refused.code == "expiry_mismatch"


def test_expiry_state_survives_a_snapshot() -> None:
    sm = _declared()
    _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 5_000, None])
    _apply(sm, [ops.QUEUE_PUSH_TTL, "q", 100, "a"], [ops.QUEUE_PUSH, "q", "b"], stamp=1_000)
    copy = StateMachine()
    copy.restore(sm.capture())
    for machine in (sm, copy):
        assert _apply(machine, [ops.QUEUE_POP, "q"], stamp=1_200) == ["b"]
        assert machine.expiry[("queue", "q")].expired == 1
    assert StateMachine().capture().get("expiry") is None
    with pytest.raises(ValueError, match="expiry"):
        StateMachine().validate({**sm.capture(), "expiry": {"queue": {"q": [1]}}})


def test_deleting_a_cell_forgets_its_rules() -> None:
    sm = _declared()
    _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 5_000, None])
    _apply(sm, [ops.QUEUE_DELETE, "q"])
    assert sm.expiry == {}


def test_the_leader_proposes_a_sweep_only_where_a_head_expired() -> None:
    from lazily_queue.maintenance import due_operations
    from lazily_queue.replicated.view import ReadView

    sm = _declared()
    _apply(sm, [ops.EXPIRY_RULES, "q", "queue", 1_000, None],
           [ops.EXPIRY_RULES, "w", "work_queue", None, None],
           [ops.EXPIRY_RULES, "t", "topic", None, 1_000])
    _apply(sm, [ops.QUEUE_PUSH, "q", "a"], [ops.WORK_PUSH_TTL, "w", 500, "b"],
           [ops.TOPIC_PUBLISH, "t", "c"], stamp=1_000)
    sm.popped.start_checking()  # (else POPPED_CHECKING is due as well)
    view = ReadView(sm)
    assert due_operations(view, 1_400, gc_topics=False) == []
    assert due_operations(view, 1_500, gc_topics=False) == [
        (ops.EXPIRE, ["w", "work_queue", EXPIRE_LIMIT])]
    swept = due_operations(view, 2_000, gc_topics=False)
    assert sorted(swept) == sorted((ops.EXPIRE, [n, k, EXPIRE_LIMIT]) for n, k in
                                   (("q", "queue"), ("w", "work_queue"), ("t", "topic")))
    assert _apply(sm, *[[code, *args] for code, args in swept], stamp=2_000) == [1, 1, 1]
    assert due_operations(view, 3_000, gc_topics=False) == []
