"""Consumer groups of a topic with expiry in the replicated state machine: each element
enters a group with its topic deadline, claims and sweeps skip and count it, snapshots
and a mirror's replay keep the deadlines, deleting the topic forgets them."""

from __future__ import annotations

from typing import Any

from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.events import OpApplied
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _declared() -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE, "t"], [ops.EXPIRY_RULES, "t", "topic", None, 10_000])
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "old"], stamp=1_000)  # deadline 11_000
    _apply(sm, [ops.GROUP_DECLARE, "t", "g", 100_000, 3, "tail"],
           [ops.GROUP_DECLARE, "t", "h", 100_000, 3, "head"], stamp=1_000)
    sm.tap = {("work_queue", "t:g")}
    sm.drain_events()
    return sm


def _groups_of_an_expiring_topic(sm: StateMachine | None = None) -> StateMachine:
    sm = _declared() if sm is None else sm
    _apply(sm, [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 500}, "short"],
           [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 60_000}, "long"],
           [ops.TOPIC_PUBLISH, "t", "plain"], stamp=2_000)
    return sm


def test_each_element_enters_the_groups_with_its_topic_deadline() -> None:
    sm = _declared()
    mirror = StateMachine()  # a client's mirror of the group, from its declared state
    objects.install(mirror, "work_queue", "t:g", objects.capture(sm, "work_queue", "t:g"))
    _groups_of_an_expiring_topic(sm)
    # the earlier of its own ttl and the topic's age limit, from its publish stamp
    assert sm.expiry[("work_queue", "t:g")].deadlines == {1: 2_500, 2: 12_000, 3: 12_000}
    assert sm.expiry[("work_queue", "t:h")].deadlines == {0: 11_000, 1: 2_500, 2: 12_000,
                                                          3: 12_000}
    # a client's mirror of the group replays the feed with the time left
    fed = [e.op for e in sm.drain_events() if isinstance(e, OpApplied)]
    assert fed == [[ops.WORK_PUSH_TTL, "t:g", 500, "short"],
                   [ops.WORK_PUSH_TTL, "t:g", 10_000, "long"],
                   [ops.WORK_PUSH_TTL, "t:g", 10_000, "plain"]]
    for op in fed:
        mirror.replay(2_000, op)
    assert mirror.expiry[("work_queue", "t:g")].deadlines == sm.expiry[
        ("work_queue", "t:g")].deadlines


def test_claims_and_sweeps_skip_and_count_expired_group_elements() -> None:
    sm = _groups_of_an_expiring_topic()
    [claimed] = _apply(sm, [ops.WORK_CLAIM, "t:g", "m", None], stamp=3_000)
    assert claimed[0]["value"] == "long"  # "short" expired at 2_500: discarded, counted
    assert sm.expiry[("work_queue", "t:g")].expired == 1
    # a sweep of the head group at 11_000 takes "old" and "short", not "long"
    assert _apply(sm, [ops.EXPIRE, "t:h", "work_queue"], stamp=11_000) == [2]
    assert [p.value for p in sm.work_queues["t:h"].core.pending()] == ["long", "plain"]
    # leased, "long" no longer expires; "plain" does
    _apply(sm, [ops.WORK_NACK, "t:g", "m", claimed[0]["delivery_id"]], stamp=12_000)
    [again] = _apply(sm, [ops.WORK_CLAIM, "t:g", "m", None], stamp=13_000)
    assert (again[0]["value"], again[0]["attempt"]) == ("long", 2)
    assert sm.expiry[("work_queue", "t:g")].expired == 2  # "plain" went on the way
    # a snapshot keeps the groups' deadlines and counts
    restored = StateMachine()
    restored.restore(sm.capture())
    assert restored.capture()["expiry"] == sm.capture()["expiry"]


def test_deleting_the_topic_forgets_its_groups_deadlines() -> None:
    sm = _groups_of_an_expiring_topic()
    _apply(sm, [ops.TOPIC_DELETE, "t"])
    assert sm.expiry == {}


def test_groups_of_a_topic_without_expiry_get_no_deadlines() -> None:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE, "t"], [ops.GROUP_DECLARE, "t", "g", 1_000, 3, "tail"])
    results: list[Any] = _apply(sm, [ops.TOPIC_PUBLISH, "t", "a"])
    assert results == [0] and sm.expiry == {}


def test_a_group_claim_decides_expiry_at_its_entrys_stamp() -> None:
    sm = _groups_of_an_expiring_topic()
    # a group claim giving time 0 (its lease's) at stamp 3_000: "short" expired at 2_500
    [claimed] = _apply(sm, [ops.WORK_CLAIM, "t:g", "m", 0], stamp=3_000)
    assert claimed[0]["value"] == "long" and claimed[0]["deadline"] == 100_000
    # a plain work queue's explicit times are its own clock (its pushes' too)
    _apply(sm, [ops.WORK_DECLARE, "w", 30_000, 3])
    _apply(sm, [ops.WORK_PUSH_OPTIONS, "w", {"ttl_ms": 500}, 100, "a"], stamp=4_000)
    [first] = _apply(sm, [ops.WORK_CLAIM, "w", "m", 599], stamp=5_000)
    assert first[0]["value"] == "a"


def test_a_mirror_of_a_group_decides_expiry_as_its_member() -> None:
    sm = _declared()
    mirror = StateMachine()
    doc = objects.capture(sm, "work_queue", "t:g")
    assert doc["group"] is True
    objects.install(mirror, "work_queue", "t:g", doc)
    sm.tap = {("work_queue", "t:g")}
    _groups_of_an_expiring_topic(sm)
    _apply(sm, [ops.WORK_CLAIM, "t:g", "m", 0], stamp=3_000)
    for event in sm.drain_events():
        if isinstance(event, OpApplied):
            mirror.replay(event.now, event.op)
    assert objects.capture(mirror, "work_queue", "t:g") == objects.capture(
        sm, "work_queue", "t:g")
    assert mirror.expiry[("work_queue", "t:g")].expired == 1
