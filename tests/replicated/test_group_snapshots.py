"""Snapshots of consumer groups declared at a topic's head: a group's run of retained
values is one run in them, its values its topic's elements (held once, whatever the
number of groups), restored as a run again; older snapshots listing the items load."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest

from lazily_queue.core.expiry import Expiry
from lazily_queue.core.work import WorkQueueCore
from lazily_queue.core.work_retained import RetainedPending
from lazily_queue.errors import InvalidSnapshot
from lazily_queue.raft.snapshot import encode_snapshot
from lazily_queue.raft.snapshot_format import decode_snapshot
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.state_machine import StateMachine

N = 20_000


def _apply(sm: StateMachine, code: int, *args: object) -> object:
    return sm.apply_plain(code, list(args))


def _topic(groups: int, expiry: bool = False) -> StateMachine:
    """A topic retaining ``N`` elements of 100 bytes (with ``expiry``: an age limit of
    the topic, and a ttl of its own on every 1000th), ``groups`` groups declared at its
    head, each having claimed three elements and released the first."""
    sm = StateMachine()
    _apply(sm, ops.TOPIC_DECLARE, "t")
    _apply(sm, ops.TOPIC_SUBSCRIBE, "t", "keeper", "durable")  # the topic retains
    if expiry:
        _apply(sm, ops.EXPIRY_RULES, "t", "topic", None, 60_000)
    for i in range(N):
        sm.now = 1_000 + (i // 10 if expiry else 0)  # with expiry, 2,000 stamp points
        value = f"{i:05d}".ljust(100, ".")
        if expiry and i % 1000 == 7:
            _apply(sm, ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 500}, value)
        else:
            _apply(sm, ops.TOPIC_PUBLISH, "t", value)
    for g in range(groups):
        _apply(sm, ops.GROUP_DECLARE, "t", f"g{g}", 1000, 3, "head")
        first, _ = _apply(sm, ops.WORK_CLAIM, f"t:g{g}", "w", 0)  # type: ignore[misc]
        _apply(sm, ops.WORK_CLAIM_MANY, f"t:g{g}", "w", 2, 0)
        _apply(sm, ops.WORK_RELEASE, f"t:g{g}", "w", [first["delivery_id"]])
    _apply(sm, ops.TOPIC_PUBLISH, "t", "late")
    return sm


def _file(sm: StateMachine) -> bytes:
    return encode_snapshot({"format": 1, "state": sm.capture(deferred=True),
                            "last": [b"b", 9, 1], "prev": [b"a", 8, 1], "members": ["1"]})


def _pending(sm: StateMachine, name: str) -> list[Any]:
    return [p.to_dict() for p in sm.work_queues[name].core.pending()]


def test_a_snapshot_holds_each_group_at_the_head_as_a_run_of_its_topics_elements() -> None:
    sm = _topic(3)
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call"
        if calls > 2_000:
            sys.setprofile(None)

    sys.setprofile(count)
    try:
        doc = sm.capture(deferred=True)  # what a snapshot copies when it is taken
    finally:
        sys.setprofile(None)
    assert calls <= 2_000, "the snapshot copied the group's items one call each"
    core = doc["work_queues"]["t:g0"]["core"]
    # the released item before the run, the element fed after it; no value of the run
    assert [core["pending"].convert(i)["item_id"] for i in core["pending"].items] == [0, N]
    assert core["run"] == [1, 3, N - 3, []]
    # the file grows by a few hundred bytes a group, not by its 20,000 items
    sizes = [len(_file(_topic(g))) for g in (0, 1, 3)]
    assert sizes[2] - sizes[0] < 3 * 1_000 and sizes[1] - sizes[0] < 1_000, sizes


def test_a_restored_group_is_a_run_of_its_topics_elements_again() -> None:
    sm = _topic(2)
    restored = StateMachine()
    restored.restore(decode_snapshot(_file(sm))["state"])
    topic = restored.topics["t"].elements()
    for name in ("t:g0", "t:g1"):
        assert _pending(restored, name) == _pending(sm, name)
        pending = restored.work_queues[name].core._pending
        assert isinstance(pending, RetainedPending) and pending.run_len() == N - 3
        assert pending.run_record()[1][3][5] is topic[8]  # type: ignore[index]
    # it goes on as the group it was, and its next snapshot is a run again
    for machine in (sm, restored):
        _apply(machine, ops.TOPIC_PUBLISH, "t", "later")
        assert _apply(machine, ops.WORK_CLAIM_MANY, "t:g0", "v", 3, 5) == _apply(
            sm if machine is restored else restored, ops.WORK_CLAIM_MANY, "t:g0", "v", 3, 5)
    assert restored.capture()["work_queues"]["t:g1"]["core"]["run"] == [1, 3, N - 3, []]
    assert _pending(restored, "t:g1") == _pending(sm, "t:g1")


def test_a_group_holds_in_a_snapshot_the_values_its_topic_no_longer_holds() -> None:
    sm = _topic(1)
    _apply(sm, ops.TOPIC_ADVANCE_TO, "t", "keeper", 5_000)
    _apply(sm, ops.TOPIC_GC, "t")  # offsets below 5,000 leave the topic, not the group
    core = sm.capture()["work_queues"]["t:g0"]["core"]
    assert core["run"][:3] == [1, 3, N - 3] and len(core["run"][3]) == 5_000 - 3
    restored = StateMachine()
    restored.restore(decode_snapshot(_file(sm))["state"])
    assert _pending(restored, "t:g0") == _pending(sm, "t:g0")
    # a topic restored by an op is another log: the group then holds every value
    _apply(sm, ops.TOPIC_RESTORE, "t", {"base_offset": 0, "subscriptions": {},
                                         "elements": ["x"] * (N + 1)})
    core = sm.capture()["work_queues"]["t:g0"]["core"]
    assert len(core["run"][3]) == N - 3
    again = StateMachine()
    again.restore(decode_snapshot(_file(sm))["state"])
    assert _pending(again, "t:g0") == _pending(sm, "t:g0")
    assert again.work_queues["t:g0"].lineage is None


def test_a_snapshot_listing_a_groups_items_one_by_one_still_loads() -> None:
    sm = _topic(1)
    state = sm.capture()
    core = sm.work_queues["t:g0"].core
    state["work_queues"]["t:g0"]["core"] = core.snapshot()  # the older form
    assert "run" not in state["work_queues"]["t:g0"]["core"]
    restored = StateMachine()
    restored.restore(state)
    assert _pending(restored, "t:g0") == _pending(sm, "t:g0")
    assert _apply(restored, ops.WORK_CLAIM_MANY, "t:g0", "v", 4, 5) == _apply(
        sm, ops.WORK_CLAIM_MANY, "t:g0", "v", 4, 5)


def test_a_mirror_installs_a_group_at_the_head_as_one_run_of_values() -> None:
    sm = _topic(1)
    doc = objects.capture(sm, "work_queue", "t:g0")
    assert len(doc["core"]["pending"]) == 2 and doc["core"]["run"][:3] == [1, 3, N - 3]
    assert len(doc["core"]["run"][3]) == N - 3  # its values: a mirror may lack the topic
    mirror = StateMachine()
    objects.install(mirror, "work_queue", "t:g0", doc)
    pending = mirror.work_queues["t:g0"].core._pending
    assert isinstance(pending, RetainedPending) and pending.run_len() == N - 3
    assert _pending(mirror, "t:g0") == _pending(sm, "t:g0")


def test_a_mirror_for_a_protocol_3_client_lists_the_items_as_before() -> None:
    sm = _topic(1, expiry=True)
    doc = objects.capture(sm, "work_queue", "t:g0", runs=False)
    assert "run" not in doc["core"] and len(doc["core"]["pending"]) == N - 1
    assert len(doc["expiry"]) == 6  # the retained deadlines among those held
    assert Expiry.from_list(doc["expiry"]).held_deadlines() == (
        sm.expiry[("work_queue", "t:g0")].held_deadlines())
    mirror = StateMachine()
    objects.install(mirror, "work_queue", "t:g0", doc)
    assert _pending(mirror, "t:g0") == _pending(sm, "t:g0")


@pytest.mark.parametrize("run, why", [
    ([0, 0, 5], "must be [at, first, count, values]"),
    ([3, 0, 5, []], "do not fit"),
    ([0, 8, 5, []], "do not fit"),
    ([0, 0, 2, ["a", "b", "c"]], "do not fit"),
    ([0, 0, 3, ["a"]], "its topic holds them"),
    ([0, 4, 2, ["a", "b"]], "duplicated"),
])
def test_a_malformed_run_is_refused_by_name(run: list[Any], why: str) -> None:
    doc = {"visibility_timeout": 10, "max_deliveries": 3, "next_item_id": 9,
           "next_delivery_id": 0, "pending": [{"item_id": 5, "value": 1, "attempts": 0}],
           "in_flight": [], "dead_letters": [], "run": run}
    with pytest.raises(InvalidSnapshot, match=re.escape(why)):
        WorkQueueCore.from_snapshot(doc)


def test_reading_a_groups_head_leaves_its_snapshot_as_it_was() -> None:
    read, unread = _topic(1), _topic(1)
    for sm in (read, unread):
        _apply(sm, ops.WORK_CLAIM, "t:g0", "w", 0)  # the released one: the run leads
    head = read.work_queues["t:g0"].core.head()  # a reader's look at the run's head
    assert head is not None and head.item_id == 3
    assert read.capture() == unread.capture()
    assert read.capture()["work_queues"]["t:g0"]["core"]["run"] == [0, 3, N - 3, []]
    assert objects.capture(read, "work_queue", "t:g0") == objects.capture(
        unread, "work_queue", "t:g0")


def test_a_snapshot_holds_a_groups_retained_deadlines_as_their_rules() -> None:
    sm = _topic(2, expiry=True)
    rules = sm.expiry[("work_queue", "t:g0")]
    section = sm.capture()["expiry"]["work_queue"]["t:g0"]
    # none listed one by one: the ids held, the age, the runs of own ttls (20 of one
    # element), the stamp points
    assert [p[0] for p in section[3]] == [N] and section[6][:4] == [3, N, 60_000, []]
    assert section[6][4] == [list(range(7, N, 1_000)), [1] * 20, [500] * 20]
    sizes = [len(_file(_topic(g, expiry=True))) for g in (0, 2)]
    assert sizes[1] - sizes[0] < 2 * 50_000, sizes  # its 2,000 stamp points, twice
    restored = StateMachine()
    restored.restore(decode_snapshot(_file(sm))["state"])
    again = restored.expiry[("work_queue", "t:g0")]
    assert again.held_deadlines() == rules.held_deadlines()
    assert again.to_list() == rules.to_list()
    for machine in (sm, restored):  # past the own ttls, not yet the age limit
        assert _apply(machine, ops.EXPIRE, "t:g0", "work_queue") == 0
    sm.now = restored.now = 1_000 + N // 10 + 30_000
    assert _apply(restored, ops.EXPIRE, "t:g0", "work_queue") == _apply(
        sm, ops.EXPIRE, "t:g0", "work_queue")
    assert _apply(restored, ops.WORK_CLAIM_MANY, "t:g0", "v", 4, None) == _apply(
        sm, ops.WORK_CLAIM_MANY, "t:g0", "v", 4, None)
    assert restored.capture() == sm.capture()


def test_an_expiry_record_listing_retained_deadlines_one_by_one_still_loads() -> None:
    sm = _topic(1, expiry=True)
    rules = sm.expiry[("work_queue", "t:g0")]
    state = sm.capture()
    listed = [[k, v] for k, v in sorted(rules.held_deadlines().items())]
    state["expiry"]["work_queue"]["t:g0"] = [*rules.to_list()[:3], listed,
                                             *rules.to_list()[4:6]]  # the older form
    restored = StateMachine()
    restored.restore(state)
    assert restored.expiry[("work_queue", "t:g0")].held_deadlines() == rules.held_deadlines()
    sm.now = restored.now = 1_000 + N // 10 + 30_000
    assert _apply(restored, ops.WORK_CLAIM_MANY, "t:g0", "v", 4, None) == _apply(
        sm, ops.WORK_CLAIM_MANY, "t:g0", "v", 4, None)


@pytest.mark.parametrize("retained, why", [
    ([3, 9, None, [], []], "not"),
    ([3, 9, None, [], [[], []], [[3], [1]]], "three lists"),
    ([3, 9, None, [], [[4, 5], [2, 1], [7, 7]], [[3], [1]]], "apart"),
    ([3, 9, None, [], [[4], [0], [7]], [[3], [1]]], "apart"),
    ([3, 9, None, [], [[8], [2], [7]], [[3], [1]]], "in 3..8"),
    ([3, 9, None, [], [[4], [1], ["7"]], [[3], [1]]], "run ttls"),
    ([3, 9, 0, [], [[], [], []], [[3], [1]]], "age limit"),
    ([9, 3, None, [], [], [], [], False], "low..end - 1"),
    ([3, 9, 0, [], [], [], [], False], "age limit"),
    ([3, 9, None, [12], [], [], [], False], "must be in"),
    ([3, 9, None, [], [5, 4], [1, 2], [], False], "ascending"),
    ([3, 9, None, [], [5], [], [], False], "a deadline per own id"),
    ([3, 9, None, [], [], [], [], "yes"], "a bool"),
    ([3, 9, None, [], ["a"], [], [], False], "list of ints"),
    ([3, 9, None, [], [], [], [], False], "two lists of ints"),
    ([3, 9, None, [], [], [], [[5, 4], [1, 2]], False], "must ascend"),
])
def test_malformed_retained_deadlines_are_refused_by_name(retained: list[Any],
                                                          why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        Expiry.from_list([None, 60_000, 0, [], [], 0, retained])


def _stamped(groups: int) -> StateMachine:
    """A topic of ``N`` elements each published at its own stamp, ``groups`` groups
    declared at its head, then one more element."""
    sm = StateMachine()
    _apply(sm, ops.TOPIC_DECLARE, "t")
    _apply(sm, ops.TOPIC_SUBSCRIBE, "t", "keeper", "durable")
    for i in range(N):
        sm.now = 1_000 + i
        _apply(sm, ops.TOPIC_PUBLISH, "t", i)
    for g in range(groups):
        _apply(sm, ops.GROUP_DECLARE, "t", f"g{g}", 1000, 3, "head")
        _apply(sm, ops.WORK_CLAIM_MANY, f"t:g{g}", "w", 2, 0)
    sm.now += 5
    _apply(sm, ops.TOPIC_PUBLISH, "t", "late")
    return sm


def test_a_snapshot_leaves_a_groups_stamps_to_its_topics() -> None:
    sm = _stamped(2)
    stamps = sm.capture()["work_stamps"]["t:g0"]
    # 20,001 stamp points, none listed: they are the topic's last ones
    assert stamps == {"points": [], "trim_at": stamps["trim_at"], "shared_from": 0}
    sizes = [len(_file(_stamped(g))) for g in (0, 2)]
    assert sizes[1] - sizes[0] < 2 * 1_000, sizes
    restored = StateMachine()
    restored.restore(decode_snapshot(_file(sm))["state"])
    assert restored.capture() == sm.capture()
    core, again = sm.work_queues["t:g1"].core, restored.work_queues["t:g1"].core
    assert [again.stamp_of(i) for i in (2, 777, N - 1, N)] == [
        core.stamp_of(i) for i in (2, 777, N - 1, N)] == [1_002, 1_777, N + 999, N + 1_004]
    for machine in (sm, restored):  # fed on, their stamps stay alike
        machine.now += 7
        _apply(machine, ops.TOPIC_PUBLISH, "t", "later")
    assert restored.capture() == sm.capture()
    assert _apply(restored, ops.WORK_CLAIM_MANY, "t:g1", "v", 3, 5) == _apply(
        sm, ops.WORK_CLAIM_MANY, "t:g1", "v", 3, 5)


def test_a_group_of_a_topic_restored_by_an_op_lists_its_stamps() -> None:
    sm = _stamped(1)
    _apply(sm, ops.TOPIC_RESTORE, "t", {"base_offset": 0, "subscriptions": {},
                                         "elements": ["x"] * (N + 1)})
    stamps = sm.capture()["work_stamps"]["t:g0"]
    assert "shared_from" not in stamps and len(stamps["points"]) == N + 1
    restored = StateMachine()
    restored.restore(decode_snapshot(_file(sm))["state"])
    assert restored.capture() == sm.capture()
    assert restored.work_queues["t:g0"].core.stamp_of(N) == N + 1_004


def test_retained_deadlines_of_ids_their_group_never_gave_are_refused() -> None:
    sm = _topic(1, expiry=True)  # the group gave ids 0..N
    state = sm.capture()
    record = state["expiry"]["work_queue"]["t:g0"]
    record[3] = []  # no own deadline among the ids claimed
    record[6][1] = 10**9  # ids held up to 10**9 - 1: every listing of them that long
    with pytest.raises(ValueError, match=re.escape(
            f"'t:g0': retained deadlines hold ids 3..{10**9 - 1} but their group gave ids "
            f"below {N + 1} only")):
        StateMachine().restore(state)
    doc = objects.capture(sm, "work_queue", "t:g0")  # what a member sends a client
    doc["expiry"][3] = []
    doc["expiry"][6][1] = 10**9
    mirror = StateMachine()
    with pytest.raises(ValueError, match=f"work queue 't:g0': expiry: .* below {N + 1} only"):
        objects.install(mirror, "work_queue", "t:g0", doc)
    assert mirror.work_queues == {} and mirror.expiry == {}


def test_retained_deadlines_of_more_ids_than_their_group_holds_are_refused() -> None:
    sm = _topic(1, expiry=True)  # the group holds N - 1 pending items and 2 in flight
    state = sm.capture()
    record = state["expiry"]["work_queue"]["t:g0"]
    record[3] = []
    record[6][1] = 10**9  # ids held up to 10**9 - 1 ...
    state["work_queues"]["t:g0"]["core"]["next_item_id"] = 10**9  # ... and given
    refusal = (f"'t:g0': retained deadlines hold {10**9 - 3} ids \\(3..{10**9 - 1}\\) but "
               f"their group holds {N + 1} items only")
    member = _topic(1, expiry=True)
    before = member.capture()
    with pytest.raises(ValueError, match=refusal):
        member.validate(state)  # what a member does before installing a snapshot
    assert member.capture() == before
    doc = objects.capture(sm, "work_queue", "t:g0")  # what a member sends a client
    doc["expiry"][3] = []
    doc["expiry"][6][1] = 10**9
    doc["core"]["next_item_id"] = 10**9
    mirror = StateMachine()
    objects.install(mirror, "work_queue", "t:g0", objects.capture(sm, "work_queue", "t:g0"))
    installed = objects.capture(mirror, "work_queue", "t:g0")
    with pytest.raises(ValueError, match=f"work queue 't:g0': expiry: .* holds {N + 1} items"):
        objects.install(mirror, "work_queue", "t:g0", doc)
    assert objects.capture(mirror, "work_queue", "t:g0") == installed


def test_retained_deadlines_of_an_object_other_than_a_work_queue_are_refused() -> None:
    sm = _topic(1, expiry=True)
    state = sm.capture()
    retained = state["expiry"]["work_queue"]["t:g0"][6]
    state["expiry"]["topic"]["t"] = [None, 60_000, 0, [], [], 0, retained]
    with pytest.raises(ValueError, match="topic 't': retained deadlines belong to a "
                                         "consumer group's work queue"):
        StateMachine().restore(state)
