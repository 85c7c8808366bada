"""Work-queue scheduling on the local backend: priority levels (strict, FIFO within a
level), delayed pushes (delay / not_before), delayed nacks and the retry policy's
back-off, the readers they move, argument checks, and a claim waiting for a due item."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from lazily_queue import (
    InvalidConfiguration,
    InvalidSchedule,
    InvalidSnapshot,
    RetryPolicy,
    WorkQueueCell,
    WorkQueueCore,
)
from lazily_queue.reactive import Context, Effect
from tests.clock import FakeClock


def cell(clock: FakeClock, **kw: object) -> WorkQueueCell:
    return WorkQueueCell(visibility_timeout=10, clock=clock, context=Context(name="sched"),
                         **kw)  # type: ignore[arg-type]


async def test_priority_levels_are_claimed_highest_first_fifo_within_a_level() -> None:
    c = cell(FakeClock())
    for value, prio in [("a", 0), ("b", 5), ("c", 9), ("d", 5), ("e", 0)]:
        await c.push(value, priority=prio)
    assert c.pending_by_priority() == {0: 2, 5: 2, 9: 1}
    assert [p.value for p in c.pending()] == ["c", "b", "d", "a", "e"]
    order = [(await c.claim("w")).value for _ in range(5)]
    assert order == ["c", "b", "d", "a", "e"]


async def test_a_redelivered_item_keeps_its_priority() -> None:
    c = cell(FakeClock())
    await c.push("low")
    await c.push("high", priority=7)
    job = await c.claim("w")
    assert job.value == "high"
    await c.nack("w", job.delivery_id)
    assert [p.value for p in c.pending()] == ["high", "low"]  # back at its level's tail
    again = await c.claim("w")
    assert (again.value, again.attempt) == ("high", 2)
    await c.release("w", [again.delivery_id])
    assert c.pending()[0].value == "high"


async def test_a_delayed_item_is_not_claimable_before_its_time() -> None:
    clock = FakeClock()
    c = cell(clock)
    seen: list[tuple[int, int, bool]] = []
    eff = Effect(lambda: seen.append((c.pending_len(), c.delayed_len(), c.is_empty())),
                 context=c.ctx)
    await c.push("later", delay=5)
    assert (c.pending_len(), c.delayed_len(), c.is_empty()) == (0, 1, True)
    assert seen[-1] == (0, 1, True)
    assert await c.poll("w") is None
    clock.now += 4.999
    assert await c.poll("w") is None
    clock.now += 0.001
    job = await c.poll("w")
    assert job is not None and job.value == "later"
    assert c.delayed_len() == 0
    eff.dispose()


async def test_not_before_is_an_aware_datetime_on_the_cells_epoch_clock() -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    clock = FakeClock(start.timestamp())
    c = cell(clock)
    await c.push("x", not_before=start + timedelta(seconds=30))
    assert [due for due, _ in c.delayed()] == [start.timestamp() + 30]
    clock.now += 29
    assert await c.poll("w") is None
    clock.now += 1
    assert (await c.poll("w")) is not None


async def test_bad_arguments_are_refused_before_anything_changes() -> None:
    c = cell(FakeClock())
    for kwargs in ({"priority": 10}, {"priority": -1}, {"priority": True},
                   {"priority": "high"}, {"delay": -1}, {"delay": float("nan")},
                   {"not_before": datetime(2030, 1, 1)}, {"not_before": 12.0},
                   {"delay": 1, "not_before": datetime(2030, 1, 1, tzinfo=UTC)}):
        with pytest.raises(InvalidSchedule):
            await c.push("x", **kwargs)  # type: ignore[arg-type]
    assert (c.pending_len(), c.delayed_len()) == (0, 0)
    job = await c.push("y")
    d = await c.claim("w")
    with pytest.raises(InvalidSchedule):
        await c.nack("w", d.delivery_id, delay=-0.5)
    assert c.in_flight_len() == 1 and job == 0
    with pytest.raises(InvalidSchedule):
        RetryPolicy.exponential(base=1, factor=0.5)
    assert await c.push("z", msg_id="m", priority=3) == await c.push("z", msg_id="m")


async def test_nack_with_delay_and_the_retry_policy_back_off() -> None:
    clock = FakeClock()
    c = cell(clock, retry=RetryPolicy.exponential(base=1, factor=2, cap=3),
             max_deliveries=4)
    await c.push("job")
    d1 = await c.claim("w")
    await c.nack("w", d1.delivery_id)  # policy: 1 s
    assert c.delayed()[0][0] == clock.now + 1
    clock.now += 1
    d2 = await c.claim("w")
    await c.nack("w", d2.delivery_id)  # 2 s
    assert c.delayed()[0][0] == clock.now + 2
    clock.now += 2
    d3 = await c.claim("w")
    clock.now += 11  # the lease expires: 4 s capped to 3
    assert await c.reap_expired() == 1
    assert c.delayed()[0][0] == clock.now + 3
    clock.now += 3
    d4 = await c.claim("w")
    await c.nack("w", d4.delivery_id, delay=100)  # last attempt: dead-lettered anyway
    assert (c.dead_letter_len(), c.delayed_len()) == (1, 0)
    assert d3.attempt == 3


async def test_explicit_nack_delay_overrides_the_policy() -> None:
    clock = FakeClock()
    c = cell(clock, retry=RetryPolicy.fixed(5))
    await c.push("job")
    d = await c.claim("w")
    await c.nack("w", d.delivery_id, delay=0)
    assert (c.pending_len(), c.delayed_len()) == (1, 0)


async def test_a_waiting_claim_wakes_when_a_delayed_item_falls_due() -> None:
    loop = asyncio.get_running_loop()
    c = WorkQueueCell(clock=loop.time, context=Context(name="wake"))  # seconds
    await c.push("soon", delay=0.05)
    job = await asyncio.wait_for(c.claim("w"), 10)
    assert job.value == "soon"


def test_a_retry_policy_needs_a_clock_locally() -> None:
    with pytest.raises(InvalidConfiguration):
        WorkQueueCell(retry=RetryPolicy.fixed(1), context=Context(name="x"))


def test_the_schedule_survives_a_snapshot() -> None:
    core = WorkQueueCore(10, 3, retry=RetryPolicy.fixed(2))
    core.push_scheduled("p", priority=4)
    core.push_scheduled("d", priority=2, due=50, now=0)
    core.push("plain")
    back = WorkQueueCore.from_snapshot(core.snapshot())
    assert back.snapshot() == core.snapshot()
    assert back.retry == RetryPolicy.fixed(2)
    assert [p.value for p in back.pending()] == ["p", "plain"]
    assert back.claim("w", 50).result.value == "p"  # type: ignore[union-attr]
    assert back.claim("w", 50).result.value == "d"  # type: ignore[union-attr]
    doc = core.snapshot()
    doc["schedule"]["delayed"][0][1]["item_id"] = 0  # the id of a pending item
    with pytest.raises(InvalidSnapshot):
        WorkQueueCore.from_snapshot(doc)
    plain = WorkQueueCore(10, 3)
    plain.push("x")
    assert set(plain.snapshot()) == {"visibility_timeout", "max_deliveries", "next_item_id",
                                      "next_delivery_id", "pending", "in_flight",
                                      "dead_letters"}


async def test_a_jobs_nack_takes_a_delay() -> None:
    clock = FakeClock()
    c = cell(clock)
    await c.push("x")
    async for job in c.deliveries("w"):
        receipt = await job.nack(delay=7)
        break
    assert receipt.outcome == "nacked"
    assert [(due, item.value) for due, item in c.delayed()] == [(clock.now + 7, "x")]


async def test_a_delay_without_a_clock_is_refused_before_anything_changes() -> None:
    c = WorkQueueCell(context=Context(name="no-clock"))
    await c.push("p", priority=2)  # a priority needs no time
    with pytest.raises(ValueError, match="clock"):
        await c.push("x", delay=1)
    await c.push("y", delay=1, now=5.0)  # an explicit time will do
    with pytest.raises(ValueError, match="now="):
        await c.push("z", now=5.0)  # a time with nothing to time
    assert (c.pending_len(), c.delayed_len()) == (1, 1)
