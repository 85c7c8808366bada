"""Consumer groups of a topic with expiry in the replicated state machine: each element
enters a group with its topic deadline, claims and sweeps skip and count it, snapshots
and a mirror's replay keep the deadlines, deleting the topic forgets them."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from lazily_queue.core.expiry import Expiry
from lazily_queue.core.groups import group_lag
from lazily_queue.core.work_retained import RetainedPending
from lazily_queue.raft.snapshot import encode_snapshot
from lazily_queue.raft.snapshot_format import decode_snapshot
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.events import OpApplied
from lazily_queue.replicated.expiry import EXPIRE_LIMIT
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply
from .group_forms import older_form


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
    held = {name: sm.expiry[("work_queue", name)].held_deadlines() for name in ("t:g", "t:h")}
    assert held["t:g"] == {1: 2_500, 2: 12_000, 3: 12_000}
    assert held["t:h"] == {0: 11_000, 1: 2_500, 2: 12_000, 3: 12_000}
    # a client's mirror of the group replays the feed with the time left
    fed = [e.op for e in sm.drain_events() if isinstance(e, OpApplied)]
    assert fed == [[ops.WORK_PUSH_TTL, "t:g", 500, "short"],
                   [ops.WORK_PUSH_TTL, "t:g", 10_000, "long"],
                   [ops.WORK_PUSH_TTL, "t:g", 10_000, "plain"]]
    for op in fed:
        mirror.replay(2_000, op)
    assert mirror.expiry[("work_queue", "t:g")].held_deadlines() == sm.expiry[
        ("work_queue", "t:g")].held_deadlines()


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


# -- a group declared at the head acts as one fed element by element ----------------------

def _twins(rules: str, start: str, stamps: str = "ascending"
           ) -> tuple[StateMachine, StateMachine]:
    """The same topic twice, with group "g" fed by each publish in the first and declared
    at the retained elements in the second, from the head or (``start`` "offset") from
    the offset where the first began, inside an entry of two publishes (``rules``: none,
    the topic's age limit, per-message ttls or both). The entries' stamps ascend, or
    (``stamps`` "shuffled") go up and down as a restored document's may."""
    fed, declared = StateMachine(), StateMachine()
    shuffled = stamps == "shuffled"
    for sm in (fed, declared):
        _apply(sm, [ops.TOPIC_DECLARE, "t"])
        if rules in ("age", "both"):
            _apply(sm, [ops.EXPIRY_RULES, "t", "topic", None, 2_000])
    first = 31 if start == "offset" else 0
    for entry in range(80):  # entries of 1 to 3 publishes, their stamps 10 ms apart
        publishes: list[list[Any]] = []
        for i in range(entry % 3 + 1):
            ttl = (900, 1_500, 5_000)[(entry + i) % 3]
            publishes.append([ops.TOPIC_PUBLISH, "t", f"e{entry}.{i}"] if rules in ("none", "age")
                             or i == 1 else
                             [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": ttl}, f"e{entry}.{i}"])
        stamp = 1_000 + 10 * ((entry * 37) % 80 if shuffled else entry)
        if shuffled:  # apply never sets the clock back: as a document restored would
            declared.now = fed.now = 0
        _apply(declared, *publishes, stamp=stamp)
        split = 1 if entry == first and start == "offset" else 0
        if entry == first:
            offset = declared.topics["t"].end_offset() - len(publishes) + split
            publishes.insert(split, [ops.GROUP_DECLARE, "t", "g", 400, 3, "tail"])
        _apply(fed, *publishes, stamp=stamp)
    at = offset if start == "offset" else "head"
    assert _apply(declared, [ops.GROUP_DECLARE, "t", "g", 400, 3, at],
                  stamp=1_790) == [["ok", None]]
    return fed, declared


def _random_op(rng: random.Random, sm: StateMachine, step: int) -> list[Any]:
    core = sm.work_queues["t:g"].core
    live = [(d.worker, d.delivery_id) for d in core.in_flight()]
    worker, did = rng.choice(live) if live else ("w0", 0)
    now = rng.choice([None, 1_800 + 7 * step])
    choices: list[list[Any]] = [
        [ops.WORK_CLAIM, "t:g", f"w{step % 2}", now],
        [ops.WORK_CLAIM_MANY, "t:g", f"w{step % 2}", rng.randint(1, 4), now],
        [ops.WORK_ACK, "t:g", worker, did],
        [ops.WORK_NACK, "t:g", worker, did],
        [ops.WORK_NACK_DELAYED, "t:g", worker, did, 30, None],
        [ops.WORK_RELEASE, "t:g", worker, [did]],
        [ops.WORK_REAP, "t:g", None],
        [ops.WORK_REDRIVE, "t:g", None],
        [ops.WORK_PROMOTE, "t:g"],
        [ops.EXPIRE, "t:g", "work_queue"],
        [ops.TOPIC_PUBLISH, "t", f"late{step}"],
        [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 150}, f"late{step}"],
    ]
    if rng.random() < 0.005:
        choices = [[ops.WORK_PURGE, "t:g", False]]
    return rng.choice(choices)


def _group_state(sm: StateMachine) -> Any:
    """The group as observed: its mirror's doc (a run of retained values listed as the
    items it holds, as a work queue fed one by one holds them), counts and deadlines."""
    core = sm.work_queues["t:g"].core
    doc = objects.capture(sm, "work_queue", "t:g")
    mirror = StateMachine()  # a client's mirror installs the doc as it is sent
    objects.install(mirror, "work_queue", "t:g", doc)
    assert objects.capture(mirror, "work_queue", "t:g") == doc
    assert mirror.work_queues["t:g"].core.snapshot() == core.snapshot()
    doc["core"] = core.snapshot()
    rules = sm.expiry.get(("work_queue", "t:g"))
    # the deadlines held, whether a run's deadlines or each one's own
    doc["expiry"] = rules and [*rules.to_list()[:3], rules.held_deadlines(),
                               *rules.to_list()[4:6]]
    return (doc, core.pending_len(), core.delayed_len(), core.in_flight_len(), core.head(),
            group_lag(core))


@pytest.mark.parametrize("rules", ["none", "age", "ttl", "both"])
@pytest.mark.parametrize("start", ["head", "offset"])
@pytest.mark.parametrize("stamps", ["ascending", "shuffled"])
@pytest.mark.parametrize("seed", range(8))
def test_a_group_declared_at_the_head_acts_as_one_fed_element_by_element(
        rules: str, start: str, stamps: str, seed: int) -> None:
    """With ``seed`` odd, the snapshot taken mid-way is of the older form listing the
    group's items and deadlines one by one (restored, the group holds a run again)."""
    fed, declared = _twins(rules, start, stamps)
    assert declared.topics["t"].stamp_index().ascending() == (stamps == "ascending")
    assert _group_state(declared) == _group_state(fed)
    rng = random.Random(seed)
    for step in range(240):
        op = _random_op(rng, fed, step)
        stamp = 1_800 + 9 * step
        assert _apply(declared, op, stamp=stamp) == _apply(fed, op, stamp=stamp), (step, op)
        if step % 40 == 0:
            assert _group_state(declared) == _group_state(fed), (step, op)
        if step == 120:  # a snapshot file taken mid-way restores to the same group
            again = StateMachine()
            pending = declared.work_queues["t:g"].core._pending
            held = pending.run_len() if isinstance(pending, RetainedPending) else 0
            older = seed % 2 == 1
            state = decode_snapshot(_file(older_form(declared) if older else
                                          declared.capture(deferred=True)))["state"]
            # the run is one run in it, its values the topic's elements
            assert ("run" in state["work_queues"]["t:g"]["core"]) == (bool(held) and not older)
            again.restore(state)
            assert _group_state(again) == _group_state(fed)
            restored = again.work_queues["t:g"].core._pending
            assert (restored.run_len() if isinstance(restored, RetainedPending) else 0) >= held
            retained = again.expiry.get(("work_queue", "t:g"))
            if held and rules != "none" and retained is not None:  # the run's deadlines too
                assert retained.retained is not None
            declared = again  # and goes on as the group it was
    assert _group_state(declared) == _group_state(fed)
    assert [p.to_dict() for p in declared.work_queues["t:g"].core.pending()] == [
        p.to_dict() for p in fed.work_queues["t:g"].core.pending()]


def _python_calls(sm: StateMachine, *op_list: list[Any], stamp: int, most: int
                  ) -> tuple[list[Any], int]:
    """The results of applying ``op_list`` and how many Python function calls it made
    (counted up to just past ``most``)."""
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call"
        if calls > most:
            sys.setprofile(None)

    sys.setprofile(count)
    try:
        results = _apply(sm, *op_list, stamp=stamp)
    finally:
        sys.setprofile(None)
    return results, calls


@pytest.mark.parametrize("own_ttl", [False, True])
@pytest.mark.parametrize("descending", [False, True])
def test_expired_retained_elements_leave_a_group_at_once(own_ttl: bool,
                                                         descending: bool) -> None:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE, "t"])
    if not own_ttl:  # the topic's age limit, else a ttl of each element's own
        _apply(sm, [ops.EXPIRY_RULES, "t", "topic", None, 10_000])
    for entry in range(200):  # 20,000 elements, 100 an entry
        publish = ([ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 500}] if own_ttl else
                   [ops.TOPIC_PUBLISH, "t"])
        if descending:  # stamps going down, as a restored document's may
            sm.now = 0
        _apply(sm, *[[*publish, f"{entry}.{i}"] for i in range(100)],
               stamp=1_200 - entry if descending else 1_000 + entry)
    _apply(sm, [ops.GROUP_DECLARE, "t", "g", 1_000, 3, "head"],
           [ops.GROUP_DECLARE, "t", "h", 1_000, 3, "head"], stamp=1_199)
    _apply(sm, [ops.TOPIC_PUBLISH, "t", "live"], stamp=20_000)
    # a sweep of one group and claims of the other at 20_000: every retained element
    # has expired, and leaves at once (a claim removes EXPIRE_LIMIT at most)
    results, calls = _python_calls(sm, [ops.EXPIRE, "t:g", "work_queue"],
                                   [ops.WORK_CLAIM, "t:h", "w", None],
                                   [ops.WORK_CLAIM, "t:h", "w", None], stamp=20_000, most=2_000)
    assert calls <= 2_000, "the sweep and claims made a call per element"
    assert EXPIRE_LIMIT == 10_000 and results[1][0] is None
    assert results[0] == 20_000 and results[2][0]["value"] == "live"
    for name in ("t:g", "t:h"):
        assert sm.expiry[("work_queue", name)].expired == 20_000
        assert sm.expiry[("work_queue", name)].held_deadlines() == (
            {20_000: 30_000} if name == "t:g" and not own_ttl else {})


@pytest.mark.parametrize("rules", ["age", "ttl", "both"])
def test_a_snapshot_file_keeps_a_declared_groups_deadlines_as_they_were_captured(
        rules: str) -> None:
    _, sm = _twins(rules, "head")
    _apply(sm, [ops.WORK_CLAIM_MANY, "t:g", "w", 3, None], stamp=1_800)
    plain = sm.capture()
    deferred = sm.capture(deferred=True)
    section = deferred["expiry"]["work_queue"]["t:g"]
    # the retained deadlines as their own form, copied as they are captured
    assert len(section) == 7 and section[3] == []
    assert Expiry.from_list(section).held_deadlines() == sm.expiry[
        ("work_queue", "t:g")].held_deadlines()
    # the state machine goes on before the writer encodes what was captured
    _apply(sm, [ops.EXPIRE, "t:g", "work_queue"], [ops.WORK_CLAIM_MANY, "t:g", "w", 5, None],
           [ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 50}, "late"], stamp=2_950)
    assert sm.capture()["expiry"] != plain["expiry"]
    assert _file(deferred) == _file(plain)


def _file(state: dict[str, Any]) -> bytes:
    return encode_snapshot({"format": 1, "state": state, "last": [b"b", 9, 1],
                            "prev": [b"a", 8, 1], "members": ["1"]})
