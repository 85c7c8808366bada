"""Delayed elements of the FIFO and the push options record: ids at commit, (due, id)
order when due, headers and limits with them, snapshot forms checked; the options map
decoded strictly and every option checked with its typed error."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from lazily_queue.core.fifo import Fifo
from lazily_queue.core.limited_fifo import LimitedFifo
from lazily_queue.core.limits import Limits
from lazily_queue.core.push_options import PushOptions, decode_map
from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.errors import InvalidHeaders, InvalidMessageId, InvalidSchedule, InvalidTtl


def test_a_delayed_element_takes_its_id_at_commit_and_joins_when_due() -> None:
    f: Fifo[str] = Fifo()
    f.push_stamped("a", 1)
    assert f.push_headers("late", 1, {"k": "v"}, due=20) is None
    assert f.push_delayed("early", 2, 10) is None
    f.push_stamped("b", 3)
    assert (f.len(), f.delayed_len(), f.next_due(), f.next_id()) == (2, 2, 10, 4)
    assert f.promote_due(9) == 0
    assert f.promote_due(20) == 2
    assert f.elements() == ["a", "b", "early", "late"]
    assert f.pop_headers(4) == (["a", "b", "early", "late"],
                                [[0, 1, 1], [3, 1, 3], [2, 1, 2], [1, 1, 1]], [[1, {"k": "v"}]])


def test_a_closed_fifo_answers_empty_while_elements_are_delayed() -> None:
    f: Fifo[str] = Fifo(capacity=1)
    f.push_stamped("x", 0)
    assert f.push_delayed("y", 0, 5) is QueuePushError.Full  # the ready ones fill it
    f.try_pop()
    f.push_delayed("y", 0, 5)
    f.try_close()
    assert f.push_delayed("z", 0, 5) is QueuePushError.Closed
    assert f.try_pop() is QueuePopError.Empty and f.pop_stamped(1) is QueuePopError.Empty
    f.promote_due(5)
    assert f.try_pop() == "y" and f.try_pop() is QueuePopError.Closed


def test_snapshot_forms_round_trip_and_bad_ones_change_nothing() -> None:
    f: Fifo[str] = Fifo()
    f.push_delayed("d", 7, 100)
    again: Fifo[str] = Fifo.restored(None, f.elements(), False, f.id_state())
    again.load_delayed(f.delayed_state())
    assert again.delayed() == [(100, 0, "d")]
    for bad in ([[100, 5, 7, "d"]], [[100, "0", 7, "d"]], [[100, 0, 7]], {"a": 1},
                [[100, 0, 7, "d"], [200, 0, 7, "e"]]):
        with pytest.raises(ValueError):
            again.load_delayed(bad)
    assert again.delayed_len() == 1
    assert again.clear() == 1 and again.delayed_len() == 0


def test_a_snapshot_naming_an_id_twice_is_refused() -> None:
    f: Fifo[str] = Fifo()
    f.push_stamped("ready", 1)
    f.push_delayed("d", 2, 100)
    with pytest.raises(ValueError, match="two delayed elements have id 1"):
        f.load_delayed([[100, 1, 2, "d"], [150, 1, 2, "again"]])
    with pytest.raises(ValueError, match="id 0 is also a ready element's"):
        f.load_delayed([[100, 0, 1, "ready"]])
    assert f.delayed() == [(100, 1, "d")] and f.elements() == ["ready"]


def test_limits_check_a_delayed_push_and_count_it_when_it_joins() -> None:
    reject: LimitedFifo[str] = LimitedFifo(Limits(max_length=1))
    reject.push_stamped("a", 0)
    assert reject.push_delayed("b", 0, 1) is QueuePushError.Full
    drop: LimitedFifo[str] = LimitedFifo(Limits(max_length=1, overflow="drop_oldest"))
    drop.push_stamped("a", 0)
    drop.push_delayed("bb", 0, 1)
    drop.promote_due(1)
    assert drop.elements() == ["bb"] and drop.quota.bytes == 2
    assert drop.quota.dropped == {"drop_oldest": 1} and drop.last_dropped == 1


def test_under_reject_ready_and_delayed_elements_never_pass_a_limit_together() -> None:
    f: LimitedFifo[str] = LimitedFifo(Limits(max_length=3, max_bytes=4))
    f.push_stamped("a", 0)
    assert f.push_delayed("b", 0, 5) is None and not f.is_full()
    assert f.push_delayed("ccc", 0, 5) is QueuePushError.Full  # 2 bytes + 3 > max_bytes
    assert f.last_refusal == "max_bytes" and f.delayed_len() == 1
    assert f.push_delayed("c", 0, 5) is None and f.is_full()  # 3 held: max_length
    assert f.push_stamped("d", 0) is QueuePushError.Full and f.last_refusal == "max_length"
    assert f.push_delayed("d", 0, 1) is QueuePushError.Full
    assert (f.len(), f.delayed_len(), f.quota.bytes, f.quota.waiting_bytes) == (1, 2, 1, 2)
    assert f.promote_due(5) == 2 and f.last_dropped == 0
    assert (f.elements(), f.quota.bytes, f.quota.waiting) == (["a", "b", "c"], 3, 0)
    assert f.try_pop() == "a" and f.push_delayed("e", 0, 9) is None and f.is_full()
    assert f.clear() == 3 and (f.quota.waiting, f.quota.waiting_bytes, f.quota.bytes) == (
        0, 0, 0)


def test_under_drop_oldest_a_delayed_push_is_refused_only_when_it_can_never_fit() -> None:
    f: LimitedFifo[str] = LimitedFifo(Limits(max_bytes=3, overflow="drop_oldest"))
    assert f.push_delayed("abcd", 0, 1) is QueuePushError.Full and f.delayed_len() == 0
    f.push_stamped("xy", 0)
    assert f.push_delayed("ab", 0, 1) is None and f.push_delayed("c", 0, 1) is None
    f.push_stamped("z", 0)  # the delayed ones do not count while they wait
    assert (f.elements(), f.quota.bytes) == (["xy", "z"], 3)
    assert f.promote_due(1) == 2 and f.last_dropped == 2
    assert (f.elements(), f.quota.bytes, f.quota.dropped) == (
        ["ab", "c"], 3, {"drop_oldest": 2})


def test_the_waiting_count_follows_a_snapshot_and_a_limited_copy() -> None:
    f: LimitedFifo[str] = LimitedFifo(Limits(max_length=2))
    f.push_delayed("a", 0, 5)
    f.push_delayed("b", 0, 5)
    again: LimitedFifo[str] = LimitedFifo(Limits(max_length=2))
    again.load(f.elements(), f.id_state())
    again.load_delayed(f.delayed_state())
    plain: Fifo[str] = Fifo()
    plain.load(f.elements(), f.id_state())
    plain.load_delayed(f.delayed_state())
    limited = LimitedFifo.limited(plain, Limits(max_length=2))
    for copy in (again, limited):
        assert copy.is_full() and copy.push_stamped("c", 0) is QueuePushError.Full
        assert (copy.quota.waiting, copy.quota.waiting_bytes) == (2, 2)


def test_push_options_are_checked_with_their_typed_errors() -> None:
    at = datetime.fromtimestamp(1_700_000_000.5, UTC)
    options = PushOptions.checked(msg_id="m", headers={"k": "v"}, ttl=1.5, not_before=at)
    assert options.to_map() == {"msg_id": "m", "headers": {"k": "v"}, "ttl_ms": 1_500,
                                "not_before_ms": 1_700_000_000_500}
    assert PushOptions.from_map(options.to_map()) == options
    assert PushOptions.checked(delay=0.0001).due_ms(10) == 11 and PushOptions().is_plain()
    bad: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"msg_id": ""}, InvalidMessageId), ({"headers": {"k": 1}}, InvalidHeaders),
        ({"ttl": -1}, InvalidTtl), ({"delay": float("inf")}, InvalidSchedule),
        ({"not_before": datetime(2030, 1, 1)}, InvalidSchedule),
        ({"delay": 1, "not_before": at}, InvalidSchedule)]
    for kwargs, error in bad:
        with pytest.raises(error):
            PushOptions.checked(**kwargs)


def test_the_options_map_is_decoded_strictly() -> None:
    with pytest.raises(ValueError, match="unknown push option 'priority'"):
        PushOptions.from_map({"priority": 3})
    with pytest.raises(ValueError, match="ttl_ms"):
        PushOptions.from_map({"ttl_ms": 1.5})
    with pytest.raises(ValueError, match="map"):
        decode_map([("msg_id", "m")], PushOptions.CHECKS)
    assert decode_map({}, PushOptions.CHECKS) == {}


def test_a_delay_too_long_to_count_in_milliseconds_waits_as_long_as_any_can() -> None:
    import sys

    from lazily_queue.core.push_options import MAX_DELAY_MS, PushOptions, whole_delay_ms

    for seconds in (MAX_DELAY_MS / 1000, 1e300, sys.float_info.max):
        assert whole_delay_ms(seconds) == MAX_DELAY_MS
    assert PushOptions.checked(delay=sys.float_info.max).delay_ms == MAX_DELAY_MS
