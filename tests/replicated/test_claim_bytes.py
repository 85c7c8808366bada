"""A work queue's claim leases at most what its session keeps room for (at least one
item), on every path that claims: plain, scheduled (priorities, delayed items), with
expiry rules, a consumer group's run. A claim sent again after a failover is answered
with its kept result; the items it leases, their order and leases are those a claim
of that many leases."""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import count
from typing import Any

from lazily_queue.core.work_masks import EXPIRED as WORK_EXPIRED
from lazily_queue.raft.batch import MAX_MESSAGE_BYTES_LIMIT
from lazily_queue.replicated import ops
from lazily_queue.replicated.results import result_size
from lazily_queue.replicated.session_results import SESSION_KEPT_BYTES, kept_size
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from lazily_queue.replicated.take_bytes import DELIVERY_ALLOWANCE, TAKE_BYTES
from tests.replicated.test_take_bytes import apply_as_member

CLIENT = CLIENT_SESSION_BASE + 92
LARGE = b"x" * 900_000
#: What a delivery of LARGE to worker "a" counts.
EACH = DELIVERY_ALLOWANCE + result_size("a", TAKE_BYTES) + 41 + len(LARGE)
_seqs = count(1)


def _claim(sm: StateMachine, name: str, n: int, seq: int | None = None) -> Any:
    """A client's claim of up to ``n`` by worker ``a`` (sent again under ``seq``)."""
    seq = next(_seqs) if seq is None else seq
    [result] = apply_as_member(
        sm, [ops.CLIENT_OP, CLIENT, seq, 1, ops.WORK_CLAIM_MANY, name, "a", n, None])
    return result


def _ids(result: Any) -> list[int]:
    return [d["item_id"] for d in result[0]]


def _twins(build: Callable[[StateMachine], None]) -> tuple[StateMachine, StateMachine]:
    pair = StateMachine(), StateMachine()
    for sm in pair:
        build(sm)
    return pair


def _same_as_a_claim_of_as_many(build: Callable[[StateMachine], None], name: str) -> Any:
    """A claim of 256 on what ``build`` makes, checked against a claim of as many as it
    leased on the same state: the same deliveries, mask and what remains."""
    bounded, exact = _twins(build)
    result = _claim(bounded, name, 256)
    assert kept_size(result) <= SESSION_KEPT_BYTES
    assert _claim(exact, name, len(result[0])) == result
    core_a, core_b = bounded.work_queues[name].core, exact.work_queues[name].core
    assert core_a.pending() == core_b.pending()
    assert core_a.in_flight() == core_b.in_flight()
    assert core_a.delayed() == core_b.delayed()
    return result


def test_a_claim_of_large_items_stops_at_the_bound_and_its_retry_gets_the_same_answer(
) -> None:
    sm = StateMachine()
    apply_as_member(sm, [ops.WORK_DECLARE, "w", 30_000, 3])
    apply_as_member(sm, *([ops.WORK_PUSH, "w", LARGE] for _ in range(30)))
    seq = next(_seqs)
    first = _claim(sm, "w", 256, seq)
    assert len(first[0]) == TAKE_BYTES // EACH == 4
    assert _ids(first) == [0, 1, 2, 3]
    assert {(d["attempt"], d["deadline"], d["worker"]) for d in first[0]} == {
        (1, 31_000, "a")}
    assert kept_size(first) <= SESSION_KEPT_BYTES
    assert _claim(sm, "w", 256, seq) == first  # answered again, not applied
    core = sm.work_queues["w"].core
    assert (core.pending_len(), core.in_flight_len()) == (26, 4)
    assert _ids(_claim(sm, "w", 256)) == [4, 5, 6, 7]


def test_an_item_past_the_bound_is_claimed_alone() -> None:
    sm = StateMachine()
    apply_as_member(sm, [ops.WORK_DECLARE, "w", 30_000, 3],
           [ops.WORK_PUSH, "w", b"x" * MAX_MESSAGE_BYTES_LIMIT], [ops.WORK_PUSH, "w", b"y"])
    first = _claim(sm, "w", 2)
    assert _ids(first) == [0]
    assert kept_size(first) <= SESSION_KEPT_BYTES
    assert _ids(_claim(sm, "w", 2)) == [1]


def test_any_items_up_to_the_largest_message_are_claimed_with_a_kept_result() -> None:
    rng = random.Random(7)
    sizes = [0, 1, 1_000, 100_000, 1_000_000, 2_000_000, TAKE_BYTES // 2,
             MAX_MESSAGE_BYTES_LIMIT - 100, MAX_MESSAGE_BYTES_LIMIT]
    values = {size: b"v" * size for size in sizes}
    for _ in range(40):
        sm = StateMachine()
        worker = "w" * rng.choice([1, 100, 100_000])
        pushed = [values[rng.choice(sizes)] for _ in range(rng.randrange(1, 30))]
        apply_as_member(sm, [ops.WORK_DECLARE, "w", 30_000, 3],
               *([ops.WORK_PUSH, "w", v] for v in pushed))
        while pushed:
            n = rng.randrange(1, 40)
            [result] = apply_as_member(sm, [ops.CLIENT_OP, CLIENT, next(_seqs), 1,
                                   ops.WORK_CLAIM_MANY, "w", worker, n, None])
            assert kept_size(result) <= SESSION_KEPT_BYTES
            per = DELIVERY_ALLOWANCE + result_size(worker, TAKE_BYTES)
            total, fit = 0, 0
            for value in pushed[:n]:
                total += per + 41 + len(value)
                if total > TAKE_BYTES and fit:
                    break
                fit += 1
            assert [d["value"] for d in result[0]] == pushed[:fit]
            del pushed[:fit]


def test_a_delivery_counts_no_more_than_its_allowance_its_value_and_worker() -> None:
    top = 2**64 - 1
    delivery = {"delivery_id": top, "item_id": top, "value": None, "worker": "",
                "attempt": top, "deadline": top, "enqueued": top}
    assert result_size(delivery, SESSION_KEPT_BYTES) <= (
        DELIVERY_ALLOWANCE + result_size(None, 1) + result_size("", 1))


def test_priorities_and_delayed_items_are_claimed_in_their_order_up_to_the_bound() -> None:
    def build(sm: StateMachine) -> None:
        apply_as_member(sm, [ops.WORK_DECLARE, "w", 30_000, 3],
               *([ops.WORK_PUSH_SCHEDULED, "w", level, delay, None, None, LARGE]
                 for level, delay in [(0, 0), (5, 0), (0, 0), (9, 500), (5, 0), (9, 0),
                                      (0, 0), (5, 0)]))
        sm.now = 2_000  # the delayed item is due

    result = _same_as_a_claim_of_as_many(build, "w")
    assert _ids(result) == [5, 3, 1, 4]  # level 9 (the delayed one after), then level 5


def test_a_claim_under_expiry_rules_skips_the_expired_and_stops_at_the_bound() -> None:
    def build(sm: StateMachine) -> None:
        apply_as_member(sm, [ops.WORK_DECLARE, "w", 30_000, 3],
               [ops.EXPIRY_RULES, "w", "work_queue", None, None],
               *([ops.WORK_PUSH_TTL, "w", 100 if i in (0, 3, 7) else 60_000, LARGE]
                 for i in range(12)))
        sm.now = 2_000  # the items pushed with a ttl of 100 ms have expired

    result = _same_as_a_claim_of_as_many(build, "w")
    assert _ids(result) == [1, 2, 4, 5]
    assert result[1] & WORK_EXPIRED


def test_a_consumer_groups_claim_of_its_topics_run_stops_at_the_bound() -> None:
    def build(sm: StateMachine) -> None:
        apply_as_member(sm, [ops.TOPIC_DECLARE, "t"], *([ops.TOPIC_PUBLISH, "t", LARGE]
                                                for _ in range(10)),
               [ops.GROUP_DECLARE, "t", "g", 30_000, 3, "head"])

    result = _same_as_a_claim_of_as_many(build, "t:g")
    assert _ids(result) == [0, 1, 2, 3]
