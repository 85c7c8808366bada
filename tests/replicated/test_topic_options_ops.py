"""The topic publish with options (``TOPIC_PUBLISH_OPTIONS``) in the replicated state
machine: strict decoding, per-message deadlines, reject limits and snapshots."""

from __future__ import annotations

from lazily_queue.core.limited_topic import LimitedTopic
from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh


def test_the_options_op_is_decoded_strictly() -> None:
    sm = StateMachine()
    apply_fresh(sm, [ops.TOPIC_DECLARE, "t"])
    for bad in ({"delay_ms": 5}, {"ttl_ms": "5"}, {"ttl_ms": 0}, {"headers": {}},
                {"msg_id": 3}, ["ttl_ms", 5], {"nope": 1}):
        result = apply_fresh(sm, [ops.TOPIC_PUBLISH_OPTIONS, "t", bad, "x"])[0]
        assert isinstance(result, OpError) and result.code == "bad_options", bad
    assert sm.topics["t"].elements() == []
    assert apply_fresh(sm, [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 5}, "x"],
                       stamp=1_000) == [0]
    assert apply_fresh(sm, [ops.TOPIC_PUBLISH, "t", "y"], stamp=1_005) == [1]
    assert sm.topics["t"].elements() == ["y"]  # "x" expired at the head by 1_005


def test_reject_limits_refuse_and_gc_or_expiry_make_room() -> None:
    sm = StateMachine()
    assert apply_fresh(sm, [ops.TOPIC_DECLARE_LIMITED, "t", [2, None, "reject"]],
                       [ops.TOPIC_SUBSCRIBE, "t", "d", "durable"]) == [None, "Subscribed"]
    assert apply_fresh(sm, [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 10}, "a"],
                       [ops.TOPIC_PUBLISH, "t", "b"], stamp=1_000) == [0, 1]
    refused = apply_fresh(sm, [ops.TOPIC_PUBLISH, "t", "c"], stamp=1_001)[0]
    assert isinstance(refused, OpError) and refused.code == "full"
    assert "max_length" in refused.message
    # the durable subscriber has not read "a", but its ttl ends it: room for one
    assert apply_fresh(sm, [ops.TOPIC_PUBLISH, "t", "c"], stamp=1_010) == [2]
    topic = sm.topics["t"]
    assert isinstance(topic, LimitedTopic)
    assert topic.elements() == ["b", "c"] and topic.quota.bytes == 2
    assert topic.quota.dropped_total() == 0
    assert apply_fresh(sm, [ops.TOPIC_ADVANCE, "t", "d"], [ops.TOPIC_GC, "t"],
                       [ops.TOPIC_PUBLISH, "t", "d"]) == ["b", 1, 3]
    restored = StateMachine()
    restored.restore(sm.capture())
    again = restored.topics["t"]
    assert isinstance(again, LimitedTopic) and again.limits().overflow == "reject"
    assert again.quota.bytes == 2 and again.elements() == ["c", "d"]


def test_a_restore_forgets_the_old_elements_deadlines() -> None:
    sm = StateMachine()
    apply_fresh(sm, [ops.TOPIC_DECLARE, "t"])
    apply_fresh(sm, [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 5}, "old"], stamp=1_000)
    snapshot = {"base_offset": 0, "elements": ["new"], "subscriptions": {}}
    assert apply_fresh(sm, [ops.TOPIC_RESTORE, "t", snapshot], stamp=1_001) == [None]
    assert apply_fresh(sm, [ops.TOPIC_PUBLISH, "t", "x"], stamp=1_010) == [1]
    assert sm.topics["t"].elements() == ["new", "x"]  # "new" is not "old": it stays
