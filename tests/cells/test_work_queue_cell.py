"""WorkQueueCell shell: reader kinds, exact atomic invalidation, waiting claims, replication."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_work_models import WorkModel

from lazily_queue import (
    Delivery,
    InvalidConfiguration,
    UnsupportedOperation,
    WorkQueueCell,
    WorkQueueCore,
    WorkTransition,
)
from lazily_queue.reactive import Context, Effect
from lazily_queue.storage import ReplicatedWorkQueueStorage, WorkQueueStorage

KINDS = ("pending_len", "is_empty", "in_flight_len", "dead_letter_len")


def _reading(reader: Any) -> Any:
    def probe() -> None:
        reader.get()

    return probe


class Probes:
    """One counting effect per reader kind, plus one effect that reads all four."""

    def __init__(self, cell: WorkQueueCell) -> None:
        readers = cell.readers()
        self.effects = {k: Effect(_reading(readers[k]), context=cell.ctx) for k in KINDS}
        self.views: list[tuple[Any, ...]] = []
        self.all = Effect(lambda: self.views.append(tuple(readers[k].get() for k in KINDS)),
                          context=cell.ctx)
        self.mark()

    def mark(self) -> None:
        self._runs = {k: e.runs for k, e in self.effects.items()}
        self._all = self.all.runs

    def changed(self) -> set[str]:
        return {k for k, e in self.effects.items() if e.runs != self._runs[k]}

    @property
    def waves(self) -> int:
        return self.all.runs - self._all


@pytest.fixture
def ctx() -> Context:
    return Context(name="work-test")


def test_construction_and_configuration(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=10, context=ctx)
    assert isinstance(cell.storage, WorkQueueCore) and isinstance(cell.storage, WorkQueueStorage)
    assert (cell.visibility_timeout, cell.max_deliveries) == (10, 3)
    with pytest.raises(TypeError, match="needs visibility_timeout"):
        WorkQueueCell(context=ctx)
    with pytest.raises(InvalidConfiguration, match="max_deliveries must be an int >= 1, got 0"):
        WorkQueueCell(visibility_timeout=1, max_deliveries=0, context=ctx)
    with pytest.raises(ValueError, match="to the storage backend"):
        WorkQueueCell(WorkQueueCore(5), visibility_timeout=5, context=ctx)
    with pytest.raises(TypeError, match="not a work queue storage"):
        WorkQueueCell(object(), context=ctx)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="clock must be a callable"):
        WorkQueueCell(visibility_timeout=1, clock=5, context=ctx)  # type: ignore[arg-type]


def test_each_op_is_one_atomic_wave_of_exact_readers(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=10, max_deliveries=1, context=ctx)
    probes = Probes(cell)
    cases: list[tuple[Any, set[str]]] = [
        (lambda: cell.push("a"), {"pending_len", "is_empty"}),
        (lambda: cell.push("b"), {"pending_len"}),
        (lambda: cell.try_claim("w", 0), {"pending_len", "in_flight_len"}),
        (lambda: cell.try_claim("w", 0), {"pending_len", "is_empty", "in_flight_len"}),
        (lambda: cell.try_claim("w", 0), set()),
        (lambda: cell.ack("x", 0), set()),
        (lambda: cell.ack("w", 0), {"in_flight_len"}),
        (lambda: cell.nack("w", 1), {"in_flight_len", "dead_letter_len"}),
        (lambda: cell.redrive(), {"pending_len", "is_empty", "dead_letter_len"}),
        (lambda: cell.try_claim("w", 0), {"pending_len", "is_empty", "in_flight_len"}),
        (lambda: cell.extend_lease("w", 2, 5), set()),
        (lambda: cell.reap_expired(15), set()),
        (lambda: cell.reap_expired(16), {"in_flight_len", "dead_letter_len"}),
    ]
    for n, (op, expected) in enumerate(cases):
        probes.mark()
        op()
        assert probes.changed() == expected, n
        assert probes.waves == (1 if expected else 0), n
        pending, empty, flying, dead = probes.views[-1]
        assert empty == (pending == 0)
        assert (pending, flying, dead) == (cell.storage.pending_len(),
                                           cell.storage.in_flight_len(),
                                           cell.storage.dead_letter_len())


def test_views_and_snapshot(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=10, context=ctx, name="jobs")
    cell.push("a")
    cell.push("b")
    d = cell.try_claim("w", 3)
    assert d == Delivery(0, 0, "a", "w", 1, 13)
    assert [p.value for p in cell.pending()] == ["b"]
    assert cell.in_flight() == [d]
    assert cell.dead_letters() == []
    assert cell.in_flight_by_worker() == {"w": [d]}
    again = WorkQueueCell.from_snapshot(cell.snapshot(), context=ctx)
    assert again.snapshot() == cell.snapshot()
    assert again.pending_len.get() == 1 and again.in_flight_len.get() == 1
    assert "jobs" in repr(cell)


async def test_claim_waits_for_work(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=10, context=ctx)
    task = asyncio.create_task(cell.claim("w", now=7))
    await asyncio.sleep(0)
    assert not task.done()
    cell.push("job")
    delivery = await asyncio.wait_for(task, 2)
    assert (delivery.value, delivery.deadline, delivery.worker) == ("job", 17, "w")
    assert cell.in_flight_len.get() == 1


async def test_claim_with_clock_callable_reads_it_at_claim_time(ctx: Context) -> None:
    ticks = iter(range(100, 200, 10))
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    task = asyncio.create_task(cell.claim("w", now=lambda: next(ticks)))
    await asyncio.sleep(0)
    cell.push("x")
    assert (await asyncio.wait_for(task, 2)).deadline == 105  # read when the claim is made
    clocked = WorkQueueCell(visibility_timeout=5, clock=lambda: 42, context=ctx)
    clocked.push("y")
    assert (await clocked.claim("w")).deadline == 47
    clocked.push("z")
    assert (await clocked.claim("w", now=1)).deadline == 6


async def test_claim_without_a_time_is_refused(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    cell.push("x")
    with pytest.raises(ValueError, match="never reads a clock of its own"):
        await cell.claim("w")
    with pytest.raises(ValueError, match="now must be a finite time >= 0"):
        await cell.claim("w", now=-1)
    assert cell.pending_len.get() == 1


async def test_claim_timeout_and_cancellation_leave_nothing_leased(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    with pytest.raises(TimeoutError):
        await cell.claim("w", now=0, timeout=0.02)
    task = asyncio.create_task(cell.claim("w", now=0))
    await asyncio.sleep(0)
    task.cancel()
    cell.push("x")  # lands in the same tick as the cancellation
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (cell.pending_len.get(), cell.in_flight_len.get()) == (1, 0)


async def test_competing_claimers_each_get_a_distinct_item(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    tasks = [asyncio.create_task(cell.claim(f"w{i}", now=0)) for i in range(3)]
    await asyncio.sleep(0)
    for v in "abc":
        cell.push(v)
    deliveries = await asyncio.wait_for(asyncio.gather(*tasks), 2)
    assert sorted(d.value for d in deliveries) == ["a", "b", "c"]
    assert sorted(d.delivery_id for d in deliveries) == [0, 1, 2]


async def test_async_twins_on_local_storage(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, max_deliveries=1, context=ctx)
    assert await cell.apush("a") == 0
    d = await cell.atry_claim("w", 0)
    assert d is not None and await cell.aextend_lease("w", d.delivery_id, 10) is True
    assert await cell.areap_expired(15) == 0
    assert await cell.anack("w", d.delivery_id) is True
    assert await cell.aredrive() == 1
    d = await cell.claim("w", now=0)
    assert await cell.aack("w", d.delivery_id) is True
    assert await cell.atry_claim("w", 0) is None


# -- replicated and observable storage ------------------------------------------------


class ObservedWork(WorkQueueCore):
    """A local core that reports every mask, as a replica applying entries would."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.listener: Any = None

    def set_change_listener(self, listener: Any) -> None:
        self.listener = listener

    def _report(self, step: WorkTransition[Any]) -> WorkTransition[Any]:
        if step.mask and self.listener is not None:
            self.listener(step.mask)
        return step


for _op in ("push", "claim", "ack", "nack", "reap_expired", "extend_lease", "redrive"):
    def _reporting(self: ObservedWork, *args: Any, _op: str = _op) -> Any:
        return self._report(getattr(WorkQueueCore, _op)(self, *args))
    setattr(ObservedWork, _op, _reporting)


class ReplicatedWork(ObservedWork):
    """A fake replicated backend: sync views of the replica, async ops commit a tick later."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.commits = 0

    async def _commit(self, op: str, *args: Any) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        return getattr(self, op)(*args)

    async def push_async(self, value: Any, *, timeout: float | None = None) -> Any:
        return await self._commit("push", value)

    async def claim_async(self, worker: str, now: float, *, timeout: float | None = None) -> Any:
        return await self._commit("claim", worker, now)

    async def ack_async(self, worker: str, delivery_id: int, *, timeout: Any = None) -> Any:
        return await self._commit("ack", worker, delivery_id)

    async def nack_async(self, worker: str, delivery_id: int, *, timeout: Any = None) -> Any:
        return await self._commit("nack", worker, delivery_id)

    async def reap_expired_async(self, now: float, *, timeout: Any = None) -> Any:
        return await self._commit("reap_expired", now)

    async def extend_lease_async(self, worker: str, delivery_id: int, now: float, *,
                                 timeout: Any = None) -> Any:
        return await self._commit("extend_lease", worker, delivery_id, now)

    async def redrive_async(self, item_ids: Any = None, *, timeout: Any = None) -> Any:
        return await self._commit("redrive", item_ids)


def test_observable_storage_invalidates_from_reports_only(ctx: Context) -> None:
    storage = ObservedWork(10, 3)
    cell = WorkQueueCell(storage, context=ctx)
    probes = Probes(cell)
    cell.push("a")
    assert probes.waves == 1 and probes.changed() == {"pending_len", "is_empty"}
    probes.mark()
    storage.claim("remote", 0)  # a transition the shell did not make
    assert probes.changed() == {"pending_len", "is_empty", "in_flight_len"}
    assert probes.views[-1] == (0, True, 1, 0)


async def test_replicated_storage_requires_async_twins(ctx: Context) -> None:
    storage = ReplicatedWork(10, 2)
    assert isinstance(storage, ReplicatedWorkQueueStorage)
    cell = WorkQueueCell(storage, context=ctx)
    for call, twin in ((lambda: cell.push("a"), "apush"),
                       (lambda: cell.try_claim("w", 0), "atry_claim"),
                       (lambda: cell.ack("w", 0), "aack"),
                       (lambda: cell.nack("w", 0), "anack"),
                       (lambda: cell.reap_expired(0), "areap_expired"),
                       (lambda: cell.extend_lease("w", 0, 0), "aextend_lease"),
                       (lambda: cell.redrive(), "aredrive")):
        with pytest.raises(UnsupportedOperation, match=f"await {twin}"):
            call()
    probes = Probes(cell)
    waiter = asyncio.create_task(cell.claim("w", now=1))
    await asyncio.sleep(0)
    assert await cell.apush("job") == 0
    d = await asyncio.wait_for(waiter, 2)
    assert (d.value, d.deadline) == ("job", 11)
    assert await cell.aextend_lease("w", d.delivery_id, 5) is True
    assert await cell.areap_expired(16) == 1
    d = await cell.claim("w", now=20)
    assert await cell.anack("w", d.delivery_id) is True
    assert await cell.aredrive([0]) == 1
    d = await cell.claim("w", now=30)
    assert await cell.aack("w", d.delivery_id) is True
    assert probes.views[-1] == (0, True, 0, 0)
    assert storage.commits == 9


# -- the shell's invalidations follow the model ----------------------------------------

WORKERS = ["w1", "w2"]
OPS = st.one_of(
    st.tuples(st.just("push"), st.integers(0, 99)),
    st.tuples(st.just("try_claim"), st.sampled_from(WORKERS), st.integers(0, 40)),
    st.tuples(st.sampled_from(["ack", "nack"]), st.sampled_from(WORKERS), st.integers(0, 8)),
    st.tuples(st.just("reap_expired"), st.integers(0, 60)),
)
BITS = {"pending_len": 1, "is_empty": 2, "in_flight_len": 4, "dead_letter_len": 8}


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3), st.lists(OPS, max_size=40), st.booleans())
def test_readers_rerun_exactly_when_the_counts_move(
    mx: int, ops: list[tuple[Any, ...]], observed: bool
) -> None:
    ctx = Context()
    cell = WorkQueueCell(ObservedWork(10, mx) if observed else WorkQueueCore(10, mx), context=ctx)
    model = WorkModel(10, mx)
    probes = Probes(cell)
    for op in ops:
        probes.mark()
        getattr(cell, op[0])(*op[1:])
        _, mask = getattr(model, "claim" if op[0] == "try_claim" else op[0])(*op[1:])
        assert probes.changed() == {k for k, bit in BITS.items() if mask & bit}, op
        assert probes.waves == (1 if mask else 0)
        assert probes.views[-1] == tuple(model.reads()[k] for k in KINDS)
