"""``TOPIC_DELETE_SUBSCRIBER``: one subscription forgotten on every replica, in log order.

Afterwards the subscriber no longer holds the retention frontier nor counts as a
subscription, its readers are told, a later subscribe starts at the tail, an unknown one
is a no-op answering ``False``, and a snapshot (and a replay of the log) agrees."""

from __future__ import annotations

from typing import Any

from lazily_queue.core.limited_topic import LimitedTopic
from lazily_queue.raft.snapshot import decode_snapshot, encode_snapshot
from lazily_queue.replicated import ops
from lazily_queue.replicated.events import TopicChanged
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply

LOG: list[list[Any]] = [
    [ops.TOPIC_DECLARE, "t"],
    [ops.TOPIC_SUBSCRIBE, "t", "slow", "durable"],
    [ops.TOPIC_SUBSCRIBE, "t", "fast", "durable"],
    [ops.TOPIC_PUBLISH, "t", "a"],
    [ops.TOPIC_PUBLISH, "t", "b"],
    [ops.TOPIC_ADVANCE, "t", "fast"],
    [ops.TOPIC_ADVANCE, "t", "fast"],
    [ops.TOPIC_DISCONNECT, "t", "slow"],
]


def _topic_with_an_abandoned_durable_subscriber() -> StateMachine:
    sm = StateMachine()
    _apply(sm, *LOG)
    sm.drain_events()
    return sm


def test_deleting_a_durable_subscriber_releases_retention_and_its_slot() -> None:
    sm = _topic_with_an_abandoned_durable_subscriber()
    topic = sm.topics["t"]
    assert _apply(sm, [ops.TOPIC_GC, "t"]) == [0]  # the offline "slow" holds a and b
    assert _apply(sm, [ops.TOPIC_DELETE_SUBSCRIBER, "t", "slow"]) == [True]
    assert sorted(topic.subscriptions()) == ["fast"]
    assert topic.subscription_count() == 1
    assert topic.retention_frontier() == 2
    assert TopicChanged("t", frozenset({"slow"})) in sm.drain_events()
    assert _apply(sm, [ops.TOPIC_GC, "t"]) == [2]
    # the same name again is a new subscriber at the tail, not the old cursor
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "c"])
    assert _apply(sm, [ops.TOPIC_SUBSCRIBE, "t", "slow", "durable"]) == ["Subscribed"]
    assert topic.cursor("slow") == 3
    assert topic.read_stream("slow") == []


def test_deleting_a_connected_or_ephemeral_subscriber_makes_its_reads_unavailable() -> None:
    sm = _topic_with_an_abandoned_durable_subscriber()
    _apply(sm, [ops.TOPIC_SUBSCRIBE, "t", "eph", "ephemeral"], [ops.TOPIC_PUBLISH, "t", "c"])
    assert _apply(sm, [ops.TOPIC_DELETE_SUBSCRIBER, "t", "eph"],
                  [ops.TOPIC_DELETE_SUBSCRIBER, "t", "fast"]) == [True, True]
    topic = sm.topics["t"]
    assert topic.read_stream("eph") is None and topic.read_stream("fast") is None
    assert topic.connected_subscribers() == frozenset()
    assert sorted(topic.subscriptions()) == ["slow"]


def test_deleting_an_unknown_subscriber_is_a_no_op_answering_false() -> None:
    sm = _topic_with_an_abandoned_durable_subscriber()
    before = sm.capture()["topics"]
    results = _apply(sm, [ops.TOPIC_DELETE_SUBSCRIBER, "t", "nobody"],
                     [ops.TOPIC_PUBLISH, "t", "c"])  # the batch goes on
    assert results == [False, 2]
    assert sm.capture()["topics"]["t"]["subscriptions"] == before["t"]["subscriptions"]
    [refused] = _apply(sm, [ops.TOPIC_DELETE_SUBSCRIBER, "missing", "slow"])
    assert isinstance(refused, OpError) and refused.code == "unknown_topic"


def test_a_snapshot_and_a_replay_of_the_log_agree_on_the_deletion() -> None:
    deletion = [[ops.TOPIC_DELETE_SUBSCRIBER, "t", "slow"], [ops.TOPIC_GC, "t"]]
    sm = StateMachine()
    _apply(sm, *LOG, *deletion)
    doc = {"format": 1, "state": sm.capture(), "last": (b"x", 2, 1), "prev": (b"x", 1, 1),
           "members": ["1"]}
    restored = StateMachine()
    restored.restore(decode_snapshot(encode_snapshot(doc))["state"])
    assert "slow" not in restored.topics["t"].subscriptions()
    assert restored.capture()["topics"] == sm.capture()["topics"]
    replayed = StateMachine()
    for op in [*LOG, *deletion]:
        replayed.replay(1_000, op)
    assert replayed.capture()["topics"] == sm.capture()["topics"]
    # after the restore the name starts afresh too
    _apply(restored, [ops.TOPIC_SUBSCRIBE, "t", "slow", "durable"])
    assert restored.topics["t"].cursor("slow") == 2


def test_a_limited_topic_forgets_the_deleted_subscribers_gap() -> None:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE_LIMITED, "t", [1, None, "drop_oldest"]],
           [ops.TOPIC_SUBSCRIBE, "t", "s", "durable"], [ops.TOPIC_PUBLISH, "t", "a"],
           [ops.TOPIC_PUBLISH, "t", "b"])
    topic = sm.topics["t"]
    assert isinstance(topic, LimitedTopic) and topic.gap("s") == 1
    assert _apply(sm, [ops.TOPIC_DELETE_SUBSCRIBER, "t", "s"]) == [True]
    assert topic.gap("s") == 0
    _apply(sm, [ops.TOPIC_SUBSCRIBE, "t", "s", "durable"])
    assert topic.gap("s") == 0  # the new subscriber inherits nothing
