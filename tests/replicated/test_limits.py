"""Queue limits in the replicated state machine: declaration, reject, drop_oldest,
transactions, snapshots and mirrors."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.limited_fifo import LimitedFifo
from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.events import QueueChanged
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _declared(max_length: int | None, max_bytes: int | None, overflow: str) -> StateMachine:
    sm = StateMachine()
    assert _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", [max_length, max_bytes, overflow]]) == [
        None]
    sm.drain_events()
    return sm


def _code(result: Any) -> str:
    assert isinstance(result, OpError), result
    return result.code


def test_reject_refuses_the_push_past_the_length_or_the_bytes() -> None:
    sm = _declared(3, 10, "reject")
    assert _apply(sm, [ops.QUEUE_PUSH, "q", b"aaaa"], [ops.QUEUE_PUSH, "q", b"bbbb"],
                  [ops.QUEUE_PUSH, "q", b"ccc"]) == [None, None, QueuePushError.Full]
    assert _apply(sm, [ops.QUEUE_PUSH, "q", "d"], [ops.QUEUE_PUSH, "q", "e"]) == [
        None, QueuePushError.Full]
    q = sm.queues["q"]
    assert isinstance(q, LimitedFifo)
    assert q.elements() == [b"aaaa", b"bbbb", "d"] and q.quota.bytes == 9
    _apply(sm, [ops.QUEUE_POP, "q"])
    assert q.quota.bytes == 5
    assert _apply(sm, [ops.QUEUE_PUSH, "q", b"ccc"]) == [None]


def test_drop_oldest_drops_and_counts_and_reports_pops_before_the_push() -> None:
    sm = _declared(2, 6, "drop_oldest")
    _apply(sm, [ops.QUEUE_PUSH, "q", "ab"], [ops.QUEUE_PUSH, "q", "cd"])
    sm.drain_events()
    assert _apply(sm, [ops.QUEUE_PUSH, "q", "efgh"]) == [None]
    q = sm.queues["q"]
    assert isinstance(q, LimitedFifo)
    assert q.elements() == ["cd", "efgh"] and q.quota.dropped == {"drop_oldest": 1}
    changes = [(e.op, e.pre_len) for e in sm.drain_events() if isinstance(e, QueueChanged)]
    assert changes == [(1, 2), (0, 1)]
    assert _apply(sm, [ops.QUEUE_PUSH, "q", "x" * 7]) == [QueuePushError.Full]
    assert _apply(sm, [ops.QUEUE_PUSH, "q", "xyz"]) == [None]
    assert q.elements() == ["xyz"] and q.quota.dropped == {"drop_oldest": 3}
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 5]) == [[["xyz"], [[3, 1, 1_000]]]]


def test_the_same_limits_declare_again_and_others_are_refused() -> None:
    sm = _declared(3, None, "reject")
    assert _apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", [3, None, "reject"]]) == [None]
    assert _code(_apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", [4, None, "reject"]])[0]) == (
        "limits_mismatch")
    assert _code(_apply(sm, [ops.QUEUE_DECLARE, "q", 3])[0]) == "capacity_mismatch"
    _apply(sm, [ops.QUEUE_DECLARE, "plain", None])
    assert _code(_apply(sm, [ops.QUEUE_DECLARE_LIMITED, "plain", [3, None, "reject"]])[0]) == (
        "limits_mismatch")


@pytest.mark.parametrize("doc", [[0, None, "reject"], [None, None, "drop"], [1, 2], "x",
                                 [True, None, "reject"]])
def test_bad_limits_are_refused(doc: Any) -> None:
    sm = StateMachine()
    assert _code(_apply(sm, [ops.QUEUE_DECLARE_LIMITED, "q", doc])[0]) == "bad_limits"
    assert "q" not in sm.queues


def test_a_transaction_past_a_reject_limit_aborts_whole() -> None:
    sm = _declared(None, 8, "reject")
    _apply(sm, [ops.QUEUE_DECLARE, "other", None])
    [result] = _apply(sm, [ops.TXN, [ops.QUEUE_PUSH, "other", "x"], [ops.QUEUE_PUSH, "q", "abcd"],
                           [ops.QUEUE_PUSH, "q", "efghi"]])
    assert result[:3] == [False, 2, "full"]
    assert sm.queues["q"].elements() == [] and sm.queues["other"].elements() == []
    [result] = _apply(sm, [ops.TXN, [ops.QUEUE_PUSH, "q", "abcd"], [ops.QUEUE_PUSH, "q", "efgh"]])
    assert result[0] is True and sm.queues["q"].elements() == ["abcd", "efgh"]


def test_snapshots_and_mirrors_keep_limits_and_dropped_counts() -> None:
    sm = _declared(2, None, "drop_oldest")
    _apply(sm, *([ops.QUEUE_PUSH, "q", i] for i in range(5)))
    doc = sm.capture()
    assert doc["limits"] == {"queues": {"q": [[2, None, "drop_oldest"], {"drop_oldest": 3}]}}
    again = StateMachine()
    again.restore(doc)
    q = again.queues["q"]
    assert isinstance(q, LimitedFifo) and q.quota.dropped == {"drop_oldest": 3}
    assert q.id_state() == sm.queues["q"].id_state() and q.quota.bytes == 2
    _apply(again, [ops.QUEUE_PUSH, "q", 9])
    assert q.elements() == [4, 9]
    mirror = StateMachine()
    objects.install(mirror, "queue", "q", objects.capture(sm, "queue", "q"))
    m = mirror.queues["q"]
    assert isinstance(m, LimitedFifo) and m.quota.dropped == {"drop_oldest": 3}
    bad = sm.capture()
    bad["limits"]["queues"]["q"][1] = {"drop_oldest": -1}
    with pytest.raises(ValueError, match="limits"):
        StateMachine().validate(bad)


def test_topic_retention_drops_unread_elements_and_survives_snapshots_and_mirrors() -> None:
    from lazily_queue.core.limited_topic import LimitedTopic

    sm = StateMachine()
    limits = [2, None, "drop_oldest"]
    _apply(sm, [ops.TOPIC_DECLARE_LIMITED, "t", limits], [ops.TOPIC_SUBSCRIBE, "t", "d", "durable"])
    _apply(sm, *([ops.TOPIC_PUBLISH, "t", i] for i in range(5)))
    t = sm.topics["t"]
    assert isinstance(t, LimitedTopic)
    assert t.elements() == [3, 4] and t.cursor("d") == 3 and t.gap("d") == 3
    assert _apply(sm, [ops.TOPIC_ADVANCE, "t", "d"]) == [3]
    assert _code(_apply(sm, [ops.TOPIC_DECLARE_LIMITED, "t", [3, None, "drop_oldest"]])[0]) == (
        "limits_mismatch")
    assert _code(_apply(sm, [ops.TOPIC_DECLARE_LIMITED, "u", [0, None, "reject"]])[0]) == (
        "bad_limits")
    doc = sm.capture()
    assert doc["limits"]["topics"] == {"t": [limits, {"drop_oldest": 3}, {"d": 3}]}
    again = StateMachine()
    again.restore(doc)
    r = again.topics["t"]
    assert isinstance(r, LimitedTopic) and r.gap("d") == 3 and r.elements() == [3, 4]
    _apply(again, [ops.TOPIC_PUBLISH, "t", 5])
    assert r.elements() == [4, 5] and r.quota.dropped == {"drop_oldest": 4}
    mirror = StateMachine()
    objects.install(mirror, "topic", "t", objects.capture(sm, "topic", "t"))
    m = mirror.topics["t"]
    assert isinstance(m, LimitedTopic) and m.gap("d") == 3
    _apply(sm, [ops.TOPIC_RESTORE, "t", {"base_offset": 0, "elements": [], "subscriptions": {}}])
    kept = sm.topics["t"]
    assert isinstance(kept, LimitedTopic) and kept.limits().doc() == limits
    _apply(sm, [ops.TOPIC_DECLARE_LIMITED, "b", [None, 4, "drop_oldest"]])
    assert _code(_apply(sm, [ops.TOPIC_PUBLISH, "b", "x" * 5])[0]) == "full"
    assert sm.topics["b"].elements() == []


def test_work_queue_limits_in_log_order_snapshots_and_mirrors() -> None:
    from lazily_queue.core.limited_work import LimitedWorkQueue

    sm = StateMachine()
    limits = [2, None, "drop_oldest"]
    _apply(sm, [ops.WORK_DECLARE_LIMITED, "w", 1000, 3, limits])
    results = _apply(sm, *([ops.WORK_PUSH, "w", v] for v in "abc"))
    assert [r[0] for r in results] == [0, 1, 2]
    core = sm.work_queues["w"].core
    assert isinstance(core, LimitedWorkQueue)
    assert [p.value for p in core.pending()] == ["b", "c"] and core.dropped == {"drop_oldest": 1}
    assert _code(_apply(sm, [ops.WORK_DECLARE_LIMITED, "w", 1000, 3, [3, None, "reject"]])[0]) == (
        "config_mismatch")
    _apply(sm, [ops.WORK_DECLARE_LIMITED, "r", 1000, 3, [None, 2, "reject"]])
    assert _code(_apply(sm, [ops.WORK_PUSH, "r", "abc"])[0]) == "full"
    doc = sm.capture()
    assert doc["limits"]["work_queues"]["w"] == [limits, {"drop_oldest": 1}]
    again = StateMachine()
    again.restore(doc)
    restored = again.work_queues["w"].core
    assert isinstance(restored, LimitedWorkQueue) and restored.held_bytes == 2
    _apply(again, [ops.WORK_PUSH, "w", "d"])
    assert [p.value for p in restored.pending()] == ["c", "d"]
    assert restored.dropped == {"drop_oldest": 2}
    mirror = StateMachine()
    objects.install(mirror, "work_queue", "w", objects.capture(sm, "work_queue", "w"))
    m = mirror.work_queues["w"].core
    assert isinstance(m, LimitedWorkQueue) and m.dropped == {"drop_oldest": 1}


def test_a_gap_goes_with_its_subscription_and_an_id_subscribed_again_starts_at_zero() -> None:
    from lazily_queue.core.limited_topic import LimitedTopic

    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE_LIMITED, "t", [2, None, "drop_oldest"]],
           [ops.TOPIC_SUBSCRIBE, "t", "d", "durable"],
           *([ops.TOPIC_SUBSCRIBE, "t", f"e{i}", "ephemeral"] for i in range(200)))
    _apply(sm, *([ops.TOPIC_PUBLISH, "t", i] for i in range(5)))
    t = sm.topics["t"]
    assert isinstance(t, LimitedTopic) and t.gap("e0") == 3 and t.gap("d") == 3
    _apply(sm, *([ops.TOPIC_DISCONNECT, "t", f"e{i}"] for i in range(200)),
           [ops.TOPIC_DISCONNECT, "t", "d"])
    assert t.gaps == {"d": 3}  # a durable subscriber offline keeps its gap
    assert sm.capture()["limits"]["topics"]["t"][2] == {"d": 3}
    _apply(sm, [ops.TOPIC_SUBSCRIBE, "t", "e0", "ephemeral"])
    assert t.gap("e0") == 0 and t.gap("d") == 3
    # A snapshot (or a mirror) listing gaps of ids it does not subscribe loads without them.
    doc = sm.capture()
    doc["limits"]["topics"]["t"][2] = {"d": 3, "gone": 7}
    again = StateMachine()
    again.restore(doc)
    r = again.topics["t"]
    assert isinstance(r, LimitedTopic) and r.gaps == {"d": 3}
    _apply(again, [ops.TOPIC_SUBSCRIBE, "t", "gone", "ephemeral"])
    assert r.gap("gone") == 0
    shape = objects.capture(sm, "topic", "t")
    shape["limits"][2] = {"d": 3, "gone": 7}
    mirror = StateMachine()
    objects.install(mirror, "topic", "t", shape)
    m = mirror.topics["t"]
    assert isinstance(m, LimitedTopic) and m.gaps == {"d": 3}
    # Restoring the topic's contents keeps the gaps of the subscriptions it restores only.
    _apply(sm, [ops.TOPIC_RESTORE, "t", {"base_offset": 0, "elements": [], "subscriptions": {}}])
    kept = sm.topics["t"]
    assert isinstance(kept, LimitedTopic) and kept.gaps == {}
