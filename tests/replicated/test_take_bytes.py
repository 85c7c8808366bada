"""A take pops at most what its session keeps room for (at least one element), so that a
take sent again after a failover is answered with its kept result instead of lost."""

from __future__ import annotations

from itertools import count
from typing import Any

from lazily_queue.core.fifo import Fifo
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.queues import take_count
from lazily_queue.replicated.results import result_size
from lazily_queue.replicated.session_results import SESSION_KEPT_BYTES, kept_size
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from lazily_queue.replicated.take_bytes import HEADERS_ALLOWANCE, TAKE_BYTES

CLIENT = CLIENT_SESSION_BASE + 91
LARGE = b"x" * 900_000
_members = count(1)


def apply_as_member(sm: StateMachine, *op_list: list[Any]) -> list[Any]:
    """``op_list`` as one entry of a member session whose floor passes them at once."""
    member = next(_members)
    batch = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(member, 0, batch), 1_000)
    assert isinstance(result, list)
    sm.apply(encode_command(member, len(op_list) + 1, []), 1_000)
    return result


def _take(sm: StateMachine, code: int, n: int) -> Any:
    [result] = apply_as_member(sm, [ops.CLIENT_OP, CLIENT, 1, 1, code, "q", n])
    return result


def test_a_take_of_large_values_stops_at_the_bound_and_its_retry_gets_the_same_answer(
) -> None:
    sm = StateMachine()
    apply_as_member(sm, [ops.QUEUE_DECLARE, "q", None])
    apply_as_member(sm, *([ops.QUEUE_PUSH, "q", LARGE] for _ in range(30)))
    first = _take(sm, ops.QUEUE_POP_STAMPED, 256)
    values = first[0]
    assert len(values) == TAKE_BYTES // (41 + len(LARGE)) == 4
    assert kept_size(first) <= SESSION_KEPT_BYTES
    assert _take(sm, ops.QUEUE_POP_STAMPED, 256) == first  # answered again, not applied
    assert sm.queues["q"].len() == 26


def test_a_take_with_headers_counts_an_allowance_for_each_element() -> None:
    sm = StateMachine()
    apply_as_member(sm, [ops.QUEUE_DECLARE, "q", None])
    apply_as_member(sm, *([ops.QUEUE_PUSH_HEADERS, "q", {"k": "v"}, None, i] for i in range(300)))
    first = _take(sm, ops.QUEUE_POP_HEADERS, 256)
    assert len(first[0]) == TAKE_BYTES // (HEADERS_ALLOWANCE + 36)
    assert first[0] == list(range(len(first[0])))
    assert _take(sm, ops.QUEUE_POP_HEADERS, 256) == first


def test_small_values_are_taken_n_at_a_time_and_one_element_always_goes() -> None:
    small: Fifo[Any] = Fifo(elements=[b"v"] * 1_000)
    assert take_count(StateMachine(), small, 256) == 256
    assert take_count(StateMachine(), Fifo(elements=[b"x" * (TAKE_BYTES + 1), b"y"]), 2) == 1
    assert take_count(StateMachine(), Fifo(), 5) == 5  # empty: the pop answers Empty as before


def test_str_values_are_counted_as_result_size_counts_them() -> None:
    for value in ("x" * 900_000, "é" * 300_000):
        each = result_size(value, TAKE_BYTES)
        taken = take_count(StateMachine(), Fifo(elements=[value] * 20), 20)
        assert taken == max(1, TAKE_BYTES // each)
