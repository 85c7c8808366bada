"""The simulator's reading of replay-by-time ops agrees with the state machine: a time
names the first retained offset stamped at or after it."""

from __future__ import annotations

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from simulator.replay_time import time_as_offset


def test_time_ops_name_the_offsets_the_state_machine_picks() -> None:
    sm = StateMachine()
    sm.apply_plain(C.TOPIC_DECLARE, ["t"])
    sm.apply_plain(C.TOPIC_SUBSCRIBE, ["t", "keep", "durable"])
    stamps: list[int] = []
    for value, stamp in (("a", 100), ("b", 200), ("c", 200), ("d", 300)):
        sm.now = stamp
        sm.apply_plain(C.TOPIC_PUBLISH, ["t", value])
        stamps.append(stamp)
    sm.apply_plain(C.TOPIC_ADVANCE, ["t", "keep"])
    sm.apply_plain(C.TOPIC_GC, ["t"])  # offset 0 collected: base 1
    for i, stamp in enumerate((50, 100, 101, 200, 201, 300, 301)):
        sid = f"s{i}"
        args = ["t", sid, "ephemeral", stamp]
        code, named = time_as_offset(C.TOPIC_SUBSCRIBE_AT_TIME, args, stamps, 1)
        assert code == C.TOPIC_SUBSCRIBE_AT
        assert sm.apply_plain(C.TOPIC_SUBSCRIBE_AT_TIME, args) == ["ok", "Subscribed"]
        assert sm.topics["t"].cursor(sid) == named[3], stamp
        seek = ["t", sid, 1000 - stamp]
        code, named = time_as_offset(C.TOPIC_SEEK_TIME, seek, stamps, 1)
        assert code == C.TOPIC_SEEK
        assert sm.apply_plain(C.TOPIC_SEEK_TIME, seek) == ["ok", named[2]]
    assert [time_as_offset(C.TOPIC_SEEK_TIME, ["t", "x", s], stamps, 1)[1][2]
            for s in (50, 200, 201, 301)] == [1, 1, 3, 4]
