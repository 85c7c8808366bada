"""Batch operations of the cores: pop_many, claim_many, release and advance_to."""

from __future__ import annotations

import pytest

from lazily_queue.core.fifo import Fifo
from lazily_queue.core.queue import QueuePopError
from lazily_queue.core.topic import TopicCore
from lazily_queue.core.work import IN_FLIGHT_LEN, PENDING_LEN, WorkQueueCore


def test_pop_many_takes_the_oldest_in_order_and_reports_empty_and_closed() -> None:
    fifo: Fifo[int] = Fifo()
    assert fifo.pop_many(3) is QueuePopError.Empty
    for v in range(5):
        fifo.try_push(v)
    assert fifo.pop_many(3) == [0, 1, 2]
    assert fifo.pop_many(10) == [3, 4]
    fifo.try_close()
    assert fifo.pop_many(1) is QueuePopError.Closed


def test_claim_many_leases_the_oldest_items_in_order() -> None:
    core = WorkQueueCore(10, 3)
    assert core.claim_many("w", 0, 4) == ([], 0)
    for v in "abcde":
        core.push(v)
    leased, mask = core.claim_many("w", 5, 3)
    assert [(d.value, d.attempt, d.deadline, d.worker) for d in leased] == [
        ("a", 1, 15, "w"), ("b", 1, 15, "w"), ("c", 1, 15, "w")]
    assert mask & PENDING_LEN and mask & IN_FLIGHT_LEN
    assert [d.value for d in core.claim_many("v", 5, 9).result] == ["d", "e"]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="n must be an int >= 1"):
            core.claim_many("w", 5, bad)  # type: ignore[arg-type]


def test_release_puts_unstarted_leases_back_at_the_head_without_counting_them() -> None:
    core = WorkQueueCore(10, 1)
    for v in "abcd":
        core.push(v)
    a, b, c = core.claim_many("w", 0, 3).result
    released, mask = core.release("w", [b.delivery_id, c.delivery_id])
    assert released == 2 and mask & PENDING_LEN and mask & IN_FLIGHT_LEN
    assert [(p.value, p.attempts) for p in core.pending()] == [("b", 0), ("c", 0), ("d", 0)]
    # With max_deliveries=1 a counted lease would have left nothing to retry: the released
    # items are delivered again as first attempts, in their order.
    again = core.claim_many("x", 0, 2).result
    assert [(d.value, d.attempt) for d in again] == [("b", 1), ("c", 1)]
    assert core.in_flight_len() == 3 and core.dead_letter_len() == 0
    assert core.ack("w", a.delivery_id).result is True


def test_release_skips_what_the_worker_does_not_hold_and_checks_before_changing() -> None:
    core = WorkQueueCore(10, 3)
    for v in "ab":
        core.push(v)
    a, b = core.claim_many("w", 0, 2).result
    assert core.release("other", [a.delivery_id]) == (0, 0)  # not its lease
    assert core.release("w", [99]) == (0, 0)  # unknown
    assert core.release("w", [b.delivery_id, b.delivery_id]).result == 1  # once
    with pytest.raises(TypeError, match="delivery_id must be an int"):
        core.release("w", [a.delivery_id, "x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="delivery_ids must be a list"):
        core.release("w", a.delivery_id)  # type: ignore[arg-type]
    assert [d.delivery_id for d in core.in_flight()] == [a.delivery_id]  # nothing half done


def test_advance_to_consumes_a_batch_clamped_to_the_end_and_never_moves_back() -> None:
    core: TopicCore[str] = TopicCore()
    core.subscribe("s")
    for v in "abcde":
        core.publish(v)
    assert core.cursor("s") == 0
    step = core.advance_to("s", 3)
    assert step.result == 3 and step.invalidated == frozenset({"s"})
    assert core.read_stream("s", 1) == ["d"] and core.read_stream("s") == ["d", "e"]
    assert core.advance_to("s", 1) == (3, frozenset())  # already past it
    assert core.advance_to("s", 99).result == 5  # clamped to the end
    assert core.advance_to("nobody", 1).result is None
    core.disconnect("s")
    assert core.advance_to("s", 1).result is None and core.cursor("s") == 5
    for bad in (-1, True, "3"):
        with pytest.raises(ValueError, match="offset must be a non-negative int"):
            core.advance_to("s", bad)  # type: ignore[arg-type]
