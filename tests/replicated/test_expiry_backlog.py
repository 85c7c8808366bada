"""A backlog of expired elements leaves over successive entries, no entry removing more
than :data:`~lazily_queue.replicated.expiry.EXPIRE_LIMIT` (every member spends a few
microseconds on each: one entry removing them all held the event loops past the
election timeout)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from lazily_queue.core.queue import QueuePopError
from lazily_queue.maintenance import Maintenance
from lazily_queue.replicated import ops
from lazily_queue.replicated.events import Expired
from lazily_queue.replicated.expiry import EXPIRE_LIMIT
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.view import ReadView

from .apply import apply_fresh as _apply


def _backlog(n: int, *, kind: str = "queue", live: tuple[str, ...] = ("a", "b", "c"),
             before: tuple[str, ...] = ()) -> StateMachine:
    """A cell holding ``before`` (no ttl), ``n`` elements whose ttls end at 2_000 (one
    push_many's), then ``live`` (no ttl)."""
    sm = StateMachine()
    name, push, push_ttl = (("q", ops.QUEUE_PUSH, ops.QUEUE_PUSH_TTL) if kind == "queue"
                            else ("w", ops.WORK_PUSH, ops.WORK_PUSH_TTL))
    _apply(sm, [ops.QUEUE_DECLARE, "q", None] if kind == "queue"
           else [ops.WORK_DECLARE, "w", 30_000, 3])
    if before:
        _apply(sm, *[[push, name, v] for v in before])
    for start in range(0, n, 20_000):
        _apply(sm, *[[push_ttl, name, 1_000, i] for i in range(start, min(n, start + 20_000))],
               stamp=1_000)
    _apply(sm, *[[push, name, v] for v in live], stamp=1_500)
    sm.drain_events()
    return sm


def _expired_in(sm: StateMachine) -> int:
    return sum(e.count for e in sm.drain_events() if isinstance(e, Expired))


def test_sweeps_remove_a_backlog_of_300_000_a_bounded_part_an_entry() -> None:
    sm = _backlog(300_000)
    entries = removed = 0
    while (got := _apply(sm, [ops.EXPIRE, "q", "queue", EXPIRE_LIMIT], stamp=2_000)[0]):
        assert got <= EXPIRE_LIMIT and _expired_in(sm) == got
        entries, removed = entries + 1, removed + got
    assert (entries, removed) == (300_000 // EXPIRE_LIMIT, 300_000)
    assert sm.expiry[("queue", "q")].expired == 300_000
    assert _apply(sm, [ops.QUEUE_POP_MANY, "q", 10], stamp=2_000) == [["a", "b", "c"]]


def test_pops_remove_a_bounded_part_of_a_backlog_and_never_hand_out_an_expired_one() -> None:
    sm = _backlog(300_000)
    answers: list[Any] = []
    while not answers or answers[-1] == QueuePopError.Empty:
        answers.extend(_apply(sm, [ops.QUEUE_POP, "q"], stamp=2_000))
        assert _expired_in(sm) <= EXPIRE_LIMIT
    # the last pop removes the last EXPIRE_LIMIT and hands out the live head
    assert answers == [QueuePopError.Empty] * (300_000 // EXPIRE_LIMIT - 1) + ["a"]
    assert sm.expiry[("queue", "q")].expired == 300_000
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 5], stamp=2_000) == [
        [["b", "c"], [[300_001, 2, 1_500]]]]


def test_a_take_past_the_limit_answers_what_it_took_before_the_expired_head() -> None:
    sm = _backlog(EXPIRE_LIMIT + 5, before=("x",))
    assert _apply(sm, [ops.QUEUE_POP_MANY, "q", 4], stamp=2_000) == [["x"]]
    assert _expired_in(sm) == EXPIRE_LIMIT
    assert _apply(sm, [ops.QUEUE_POP_MANY, "q", 4], stamp=2_000) == [["a", "b", "c"]]
    assert sm.expiry[("queue", "q")].expired == EXPIRE_LIMIT + 5


def test_work_claims_and_sweeps_remove_a_bounded_part_of_a_backlog() -> None:
    sm = _backlog(2 * EXPIRE_LIMIT + 10, kind="work_queue")
    [[claimed, _]] = _apply(sm, [ops.WORK_CLAIM_MANY, "w", "x", 2, None], stamp=2_000)
    assert claimed == [] and _expired_in(sm) == EXPIRE_LIMIT
    assert _apply(sm, [ops.EXPIRE, "w", "work_queue", EXPIRE_LIMIT], stamp=2_000) == [
        EXPIRE_LIMIT] and _expired_in(sm) == EXPIRE_LIMIT
    [[delivery, _]] = _apply(sm, [ops.WORK_CLAIM, "w", "x", None], stamp=2_000)
    assert delivery["value"] == "a" and _expired_in(sm) == 10
    assert sm.expiry[("work_queue", "w")].expired == 2 * EXPIRE_LIMIT + 10


def test_a_topic_sweep_removes_at_most_its_limit() -> None:
    sm = StateMachine()
    _apply(sm, [ops.TOPIC_DECLARE, "t"], [ops.EXPIRY_RULES, "t", "topic", None, 1_000])
    _apply(sm, *[[ops.TOPIC_PUBLISH, "t", i] for i in range(25)], stamp=1_000)
    assert _apply(sm, [ops.EXPIRE, "t", "topic", 10], [ops.EXPIRE, "t", "topic", 10],
                  [ops.EXPIRE, "t", "topic", 10], stamp=2_000) == [10, 10, 5]
    assert sm.expiry[("topic", "t")].expired == 25


def test_a_sweep_in_the_form_of_an_older_log_removes_every_expired_element() -> None:
    sm = _backlog(EXPIRE_LIMIT + 5)
    assert _apply(sm, [ops.EXPIRE, "q", "queue"], stamp=2_000) == [EXPIRE_LIMIT + 5]
    assert sm.queues["q"].elements() == ["a", "b", "c"]


@pytest.mark.parametrize("args", [["q", "queue", 0], ["q", "queue", EXPIRE_LIMIT + 1],
                                  ["q", "queue", True], ["q", "queue", 5.0],
                                  ["q", "queue", 5, 6]])
def test_a_sweep_limit_outside_its_range_is_refused(args: list[Any]) -> None:
    sm = _backlog(3)
    [result] = _apply(sm, [ops.EXPIRE, *args], stamp=2_000)
    assert isinstance(result, OpError) and result.code == "bad_args"
    assert sm.queues["q"].len() == 6


def test_the_leaders_maintenance_sweeps_again_at_once_while_a_sweep_was_cut_short() -> None:
    sm = _backlog(2 * EXPIRE_LIMIT + 10)
    sm.popped.start_checking()  # (else POPPED_CHECKING is due as well)
    calls: list[list[Any]] = []

    async def call(code: int, args: list[Any], *, timeout: float) -> Any:
        calls.append([code, *args])
        [result] = _apply(sm, [code, *args], stamp=2_000)
        return result

    node = SimpleNamespace(wall_clock=lambda: 2.0, view=ReadView(sm), dedup=None,
                           driver=SimpleNamespace(call=call), op_timeout=5.0)
    asyncio.run(Maintenance(node).once(False))  # type: ignore[arg-type]
    assert calls == [[ops.EXPIRE, "q", "queue", EXPIRE_LIMIT]] * 3
    assert sm.queues["q"].elements() == ["a", "b", "c"]
    assert sm.expiry[("queue", "q")].expired == 2 * EXPIRE_LIMIT + 10


class _CountedDeadlines(dict[int, int]):
    """Per-message deadlines counting the ids read in order (``islice`` over them)."""

    read = 0

    def __iter__(self) -> Iterator[int]:
        for key in dict.__iter__(self):
            _CountedDeadlines.read += 1
            yield key


def test_a_sweep_takes_no_step_per_delayed_element_below_the_head_for_each_it_removes(
        ) -> None:
    """Delayed elements with ttls of their own, pushed between elements the default ttl
    expires, made each of those cost a read of every delayed one's deadline below it:
    one sweep of 10,000 took 8.8 s with 50,000 delayed, on every member."""
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.EXPIRY_RULES, "q", "queue", 1_000, None])
    delayed = [ops.QUEUE_PUSH_OPTIONS, "q", {"ttl_ms": 10**9, "delay_ms": 10**8}, "later"]
    _apply(sm, *[delayed if i % 2 else [ops.QUEUE_PUSH, "q", i] for i in range(4_000)])
    expiry = sm.expiry[("queue", "q")]
    expiry.deadlines = _CountedDeadlines(expiry.deadlines)
    assert _apply(sm, [ops.EXPIRE, "q", "queue", EXPIRE_LIMIT], stamp=5_000) == [2_000]
    assert sm.queues["q"].len() == 0 and len(expiry.deadlines) == 2_000
    assert _CountedDeadlines.read < 4_000, _CountedDeadlines.read
