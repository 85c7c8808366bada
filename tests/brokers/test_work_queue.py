"""WorkQueueCell over the broker storages: leases, settlement, retries, dead letters."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import SettlementRejected, WorkQueueCell
from lazily_queue.reactive import wait_until

from .conftest import fresh


def cell(provider: Any, *, vt: float = 30.0, retries: int = 3) -> WorkQueueCell:
    storage = provider.work_queue(fresh("jobs"), visibility_timeout=vt, max_deliveries=retries)
    return WorkQueueCell(storage)


async def test_claim_ack_and_a_second_ack_is_refused(provider: Any) -> None:
    jobs = cell(provider)
    await jobs.push({"id": 1})
    delivery = await jobs.claim("w1", timeout=10)
    assert delivery.value == {"id": 1} and delivery.attempt == 1 and delivery.worker == "w1"
    receipt = await jobs.ack("w1", delivery.delivery_id)
    assert receipt.outcome == "acked" and receipt.item_id == delivery.item_id
    with pytest.raises(SettlementRejected):
        await jobs.ack("w1", delivery.delivery_id)
    await jobs.storage.sync()  # type: ignore[attr-defined]
    assert (jobs.pending_len(), jobs.in_flight_len(), jobs.dead_letter_len()) == (0, 0, 0)


async def test_concurrent_settlements_of_one_delivery_settle_it_once(provider: Any) -> None:
    """Settlements made together share a round trip; only the first of one delivery
    counts (an ack and a nack of the same lease included)."""
    jobs = cell(provider)
    for value in range(3):
        await jobs.push(value)
    leased = await jobs.claim_many("w", 3, timeout=10)
    twice = leased[0].delivery_id
    outcomes = await asyncio.gather(
        jobs.ack("w", twice), jobs.ack("w", twice), jobs.nack("w", twice),
        *(jobs.ack("w", d.delivery_id) for d in leased[1:]), return_exceptions=True)
    accepted = [o for o in outcomes[:3] if not isinstance(o, SettlementRejected)]
    assert len(accepted) == 1, outcomes
    assert not any(isinstance(o, BaseException) for o in outcomes[3:]), outcomes
    await jobs.storage.sync()  # type: ignore[attr-defined]
    assert (jobs.in_flight_len(), jobs.dead_letter_len()) == (0, 0)


async def test_another_workers_settlement_is_refused(provider: Any) -> None:
    jobs = cell(provider)
    await jobs.push("x")
    delivery = await jobs.claim("w1", timeout=10)
    with pytest.raises(SettlementRejected):
        await jobs.ack("w2", delivery.delivery_id)
    with pytest.raises(SettlementRejected):
        await jobs.extend("w2", delivery.delivery_id)
    await jobs.extend("w1", delivery.delivery_id)
    await jobs.ack("w1", delivery.delivery_id)


async def test_nack_retries_then_dead_letters(provider: Any) -> None:
    jobs = cell(provider, retries=2)
    await jobs.push("flaky")
    first = await jobs.claim("w", timeout=10)
    await jobs.nack("w", first.delivery_id)
    second = await jobs.claim("w", timeout=10)
    assert second.item_id == first.item_id and second.attempt == 2
    assert second.delivery_id != first.delivery_id
    await jobs.nack("w", second.delivery_id)
    await wait_until(lambda: jobs.dead_letter_len() == 1, context=jobs.ctx, timeout=10)
    await jobs.storage.sync()  # type: ignore[attr-defined]  (the views follow on sync)
    letter = jobs.dead_letters()[0]
    assert letter.value == "flaky" and letter.attempts == 2 and letter.reason == "nack"
    assert await jobs.redrive() == 1
    again = await jobs.claim("w", timeout=10)
    assert again.value == "flaky" and again.attempt == 1


async def test_an_expired_lease_is_delivered_again(provider: Any) -> None:
    jobs = cell(provider, vt=0.5)
    await jobs.push("slow")
    first = await jobs.claim("w1", timeout=10)
    second = await jobs.claim("w2", timeout=20)  # waits until the lease has expired
    assert second.item_id == first.item_id and second.attempt == 2
    with pytest.raises(SettlementRejected):
        await jobs.ack("w1", first.delivery_id)
    await jobs.ack("w2", second.delivery_id)


async def test_deliveries_ack_every_job(provider: Any) -> None:
    jobs = cell(provider)
    for n in range(20):
        await jobs.push(n)
    done: list[int] = []

    async def work() -> None:
        async for job in jobs.deliveries("w", prefetch=4):
            async with job:
                done.append(job.value)
            if len(done) == 20:
                return

    await asyncio.wait_for(work(), 30)
    assert sorted(done) == list(range(20))
    await wait_until(lambda: jobs.in_flight_len() == 0 and jobs.pending_len() == 0,
                     context=jobs.ctx, timeout=10)


async def test_release_gives_unstarted_leases_back(provider: Any) -> None:
    jobs = cell(provider)
    for n in range(3):
        await jobs.push(n)
    leased = await jobs.claim_many("w", 3, timeout=10)
    assert await jobs.release("w", [d.delivery_id for d in leased[1:]]) == 2
    values = [(await jobs.claim("v", timeout=10)).value for _ in range(2)]
    assert sorted(values) == [1, 2]


async def test_a_nacked_or_released_item_is_claimed_again_before_newer_ones(
        provider: Any) -> None:
    """The documented redelivery order holds for the very next claim: the nack (or
    release) has reached the broker when it returns."""
    for _ in range(10):
        jobs = cell(provider)
        await jobs.push_many(["first", "second"])
        nacked = await jobs.claim("w", timeout=10)
        await jobs.nack("w", nacked.delivery_id)
        again = await jobs.claim("w", timeout=10)
        assert (again.value, again.attempt) == ("first", 2)
        assert await jobs.release("w", [again.delivery_id]) == 1
        assert (await jobs.claim("w", timeout=10)).value == "first"


async def test_ack_many_settles_the_workers_live_deliveries_and_refuses_the_rest(
        provider: Any) -> None:
    jobs = cell(provider)
    for n in range(3):
        await jobs.push(n)
    mine = await jobs.claim_many("w1", 2, timeout=10)
    theirs = await jobs.claim("w2", timeout=10)
    ids = [mine[0].delivery_id, theirs.delivery_id, mine[1].delivery_id,
           mine[0].delivery_id, 12345]
    receipts = await jobs.ack_many("w1", ids)
    assert [r is not None for r in receipts] == [True, False, True, False, False]
    assert [r.item_id for r in receipts if r is not None] == [d.item_id for d in mine]
    assert all(r.outcome == "acked" and r.worker == "w1" for r in receipts if r is not None)
    await jobs.ack("w2", theirs.delivery_id)
    await jobs.storage.sync()  # type: ignore[attr-defined]
    assert (jobs.pending_len(), jobs.in_flight_len()) == (0, 0)


async def test_scheduling_arguments_are_refused_naming_the_backend(provider: Any) -> None:
    """No broker declares ``scheduling``: priority, delay, not_before and nack(delay=)
    raise UnsupportedOperation naming the storage, and nothing is pushed or settled."""
    from datetime import UTC, datetime

    from lazily_queue import UnsupportedOperation

    jobs = cell(provider)
    backend = type(jobs.storage).__name__
    for kwargs in ({"priority": 3}, {"delay": 1.0},
                   {"not_before": datetime(2030, 1, 1, tzinfo=UTC)}):
        with pytest.raises(UnsupportedOperation, match=backend):
            await jobs.push("x", **kwargs)  # type: ignore[arg-type]
    await jobs.push("y")
    delivery = await jobs.claim("w1", timeout=10)
    with pytest.raises(UnsupportedOperation, match=backend):
        await jobs.nack("w1", delivery.delivery_id, delay=5)
    await jobs.ack("w1", delivery.delivery_id)
    await jobs.storage.sync()  # type: ignore[attr-defined]
    assert (jobs.pending_len(), jobs.in_flight_len(), jobs.delayed_len()) == (0, 0, 0)
