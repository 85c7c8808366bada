"""A transaction's work-queue push takes every option the cell's push takes (msg_id,
headers, ttl, priority, delay / not_before), checked where it is added, applied in the
transaction's one step, locally and on a cluster; under limits the check counts
priorities and delays as the push applies them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lazily_queue import (
    InvalidSchedule,
    InvalidTtl,
    Limits,
    TransactionAborted,
    TransactionUnsupported,
    WorkQueueCell,
    testing,
    transaction,
)
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from tests.clock import FakeClock

Open = Callable[..., WorkQueueCell]


@asynccontextmanager
async def _local() -> AsyncIterator[tuple[Open, Callable[[], Any]]]:
    clock = FakeClock(time.time())

    def open_cell(name: str, **kw: Any) -> WorkQueueCell:
        return WorkQueueCell(visibility_timeout=30, clock=clock, ttl=3600, name=name, **kw)

    yield open_cell, transaction


@asynccontextmanager
async def _raft() -> AsyncIterator[tuple[Open, Callable[[], Any]]]:
    async with testing.cluster(1) as c:
        node = await c.leader()

        def open_cell(name: str, **kw: Any) -> WorkQueueCell:
            return node.work_queue(name, visibility_timeout=30, **kw)

        yield open_cell, node.transaction


BACKENDS = {"local": _local, "raft": _raft}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Callable[[], Any]:
    return BACKENDS[request.param]  # type: ignore[no-any-return]


async def test_every_work_push_option_commits_with_the_transaction(
        backend: Callable[[], Any]) -> None:
    async with backend() as (open_cell, begin):
        w = open_cell("w")
        later = datetime.now(UTC) + timedelta(hours=1)
        async with begin() as tx:
            urgent = tx.push(w, "urgent", priority=7, headers={"k": "v"}, ttl=600,
                             msg_id="tx-1")
            again = tx.push(w, "again", priority=1, msg_id="tx-1")  # applies nothing
            delayed = tx.push(w, "delayed", delay=3600, ttl=7200)
            scheduled = tx.push(w, "scheduled", not_before=later, priority=2)
            plain = tx.push(w, "plain")
        assert again.result == urgent.result
        assert (w.pending_len(), w.delayed_len()) == (2, 2)
        assert w.pending_by_priority() == {7: 1, 0: 1}
        assert len({urgent.result, delayed.result, scheduled.result, plain.result}) == 4
        assert w.headers_of(urgent.result) == {"k": "v"}
        job = await w.claim("x")
        assert job.value == "urgent" and job.item_id == urgent.result


async def test_bad_options_are_refused_where_added(backend: Callable[[], Any]) -> None:
    async with backend() as (open_cell, begin):
        w = open_cell("w")
        tx = begin()
        with pytest.raises(InvalidSchedule):
            tx.push(w, "x", priority=12)
        with pytest.raises(InvalidSchedule):
            tx.push(w, "x", delay=1, not_before=datetime.now(UTC))
        with pytest.raises(InvalidTtl):
            tx.push(w, "x", ttl=-1)
        assert tx.ops == []
        await tx.commit()
        assert w.pending_len() == 0


async def test_a_local_cell_refuses_what_it_cannot_do_where_added() -> None:
    tx = transaction()
    with pytest.raises(TransactionUnsupported, match="no expiry capability"):
        tx.push(WorkQueueCell(clock=FakeClock()), "x", ttl=5)
    with pytest.raises(ValueError, match="clock"):  # a delay needs the cell's time
        tx.push(WorkQueueCell(), "x", delay=5)
    with pytest.raises(TransactionUnsupported, match="no priority"):
        from lazily_queue import QueueCell
        tx.push(QueueCell(), "x", priority=3)
    assert tx.ops == []


async def test_limits_count_priorities_and_delays_as_the_push_applies_them(
        backend: Callable[[], Any]) -> None:
    async with backend() as (open_cell, begin):
        w = open_cell("w", limits=Limits(max_length=2, overflow="drop_oldest"))
        async with begin() as tx:
            tx.push(w, "high", priority=5)
            tx.push(w, "low")
            tx.push(w, "newer")  # drops "low": the lowest level goes first
        assert [p.value for p in w.pending()] == ["high", "newer"] and w.dropped() == 1
        with pytest.raises(TransactionAborted) as aborted:  # a delayed item never drops
            async with begin() as tx:
                tx.push(w, "later-1", delay=3600)
                tx.push(w, "later-2", delay=3600)
                tx.push(w, "now")
        assert aborted.value.code == "full" and aborted.value.index == 2
        assert [p.value for p in w.pending()] == ["high", "newer"] and w.delayed_len() == 0


def test_a_txn_work_push_with_options_is_checked_whole() -> None:
    sm = StateMachine()
    sm.apply_plain(C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {"limits": [1, None, "reject"]}])
    sm.now = 1_000
    before = sm.capture()
    for bad, code in (([C.WORK_PUSH_OPTIONS, "w", {"colour": 1}, None, "v"], "bad_options"),
                      ([C.WORK_PUSH_OPTIONS, "w", {}, "soon", "v"], "bad_time"),
                      ([C.WORK_PUSH_OPTIONS, "w", {}, None], "bad_args")):
        result = sm.apply_plain(C.TXN, [[C.WORK_PUSH, "w", "a"], bad])
        assert not isinstance(result, OpError) and result[:3] == [False, 1, code]
        assert sm.capture() == before
    full = sm.apply_plain(C.TXN, [[C.WORK_PUSH_OPTIONS, "w", {"delay_ms": 5}, None, "a"],
                                  [C.WORK_PUSH_OPTIONS, "w", {"priority": 2}, None, "b"]])
    assert full[:3] == [False, 1, "full"] and sm.capture() == before
    done = sm.apply_plain(C.TXN, [[C.WORK_PUSH_OPTIONS, "w", {"delay_ms": 5, "msg_id": "m"},
                                   None, "a"],
                                  [C.WORK_PUSH_OPTIONS, "w", {"msg_id": "m"}, None, "b"]])
    assert done[0] is True and done[1][0][0] == done[1][1][0]
    assert sm.work_queues["w"].core.delayed_len() == 1
