"""WorkQueueCell shell: reader kinds, exact atomic invalidation, waiting claims, settlement
refusals, and the storage seam's declared capabilities."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_work_models import WorkModel

from lazily_queue import (
    Delivery,
    InvalidConfiguration,
    InvalidName,
    Receipt,
    SettlementRejected,
    UnsupportedOperation,
    WorkQueueCell,
    WorkQueueCore,
    WorkTransition,
    serializers,
)
from lazily_queue.node import Node
from lazily_queue.reactive import Context, Effect
from lazily_queue.storage import LocalWorkQueueStorage, StorageCapabilities

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
    assert isinstance(cell.storage, LocalWorkQueueStorage)
    assert cell.capabilities == StorageCapabilities(sync=True, logical_time=True, dedup=True,
                                                   scheduling=True, headers=True)
    assert (cell.visibility_timeout, cell.max_deliveries) == (10, 3)
    default = WorkQueueCell(context=ctx)  # the defaults of Node.work_queue
    assert (default.visibility_timeout, default.max_deliveries) == (30.0, 3)
    node_defaults = inspect.signature(Node.work_queue).parameters
    assert node_defaults["visibility_timeout"].default == 30.0
    assert node_defaults["max_deliveries"].default == 3
    with pytest.raises(InvalidConfiguration, match="max_deliveries must be an int >= 1, got 0"):
        WorkQueueCell(visibility_timeout=1, max_deliveries=0, context=ctx)
    with pytest.raises(ValueError, match="to the storage backend"):
        WorkQueueCell(LocalWorkQueueStorage(WorkQueueCore(5)), visibility_timeout=5, context=ctx)
    with pytest.raises(TypeError, match="not a work queue storage: it has no `capabilities`"):
        WorkQueueCell(object(), context=ctx)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="WorkQueueCore is not a work queue storage"):
        WorkQueueCell(WorkQueueCore(5), context=ctx)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="clock must be a callable"):
        WorkQueueCell(visibility_timeout=1, clock=5, context=ctx)  # type: ignore[arg-type]


def test_each_op_is_one_atomic_wave_of_exact_readers(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=10, max_deliveries=1, context=ctx)
    probes = Probes(cell)
    cases: list[tuple[Any, set[str]]] = [
        (lambda: cell.try_push("a"), {"pending_len", "is_empty"}),
        (lambda: cell.try_push("b"), {"pending_len"}),
        (lambda: cell.try_claim("w", 0), {"pending_len", "in_flight_len"}),
        (lambda: cell.try_claim("w", 0), {"pending_len", "is_empty", "in_flight_len"}),
        (lambda: cell.try_claim("w", 0), set()),
        (lambda: cell.try_ack("x", 0), set()),
        (lambda: cell.try_ack("w", 0), {"in_flight_len"}),
        (lambda: cell.try_nack("w", 1), {"in_flight_len", "dead_letter_len"}),
        (lambda: cell.try_redrive(), {"pending_len", "is_empty", "dead_letter_len"}),
        (lambda: cell.try_claim("w", 0), {"pending_len", "is_empty", "in_flight_len"}),
        (lambda: cell.try_extend("w", 2, 5), set()),
        (lambda: cell.try_reap_expired(15), set()),
        (lambda: cell.try_reap_expired(16), {"in_flight_len", "dead_letter_len"}),
    ]
    for n, (op, expected) in enumerate(cases):
        probes.mark()
        with contextlib.suppress(SettlementRejected):
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
    cell.try_push("a")
    cell.try_push("b")
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
    cell.try_push("job")
    delivery = await asyncio.wait_for(task, 2)
    assert (delivery.value, delivery.deadline, delivery.worker) == ("job", 17, "w")
    assert cell.in_flight_len.get() == 1


async def test_claim_with_clock_callable_reads_it_at_claim_time(ctx: Context) -> None:
    ticks = iter(range(100, 200, 10))
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    task = asyncio.create_task(cell.claim("w", now=lambda: next(ticks)))
    await asyncio.sleep(0)
    cell.try_push("x")
    assert (await asyncio.wait_for(task, 2)).deadline == 105  # read when the claim is made
    clocked = WorkQueueCell(visibility_timeout=5, clock=lambda: 42, context=ctx)
    clocked.try_push("y")
    assert (await clocked.claim("w")).deadline == 47
    clocked.try_push("z")
    assert (await clocked.claim("w", now=1)).deadline == 6


async def test_claim_without_a_time_is_refused(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    cell.try_push("x")
    with pytest.raises(ValueError, match="never reads a clock of its own"):
        await cell.claim("w")
    with pytest.raises(ValueError, match="now must be a finite time from 0 to"):
        await cell.claim("w", now=-1)
    assert cell.pending_len.get() == 1


async def test_claim_timeout_and_cancellation_leave_nothing_leased(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    with pytest.raises(TimeoutError):
        await cell.claim("w", now=0, timeout=0.02)
    task = asyncio.create_task(cell.claim("w", now=0))
    await asyncio.sleep(0)
    task.cancel()
    cell.try_push("x")  # lands in the same tick as the cancellation
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (cell.pending_len.get(), cell.in_flight_len.get()) == (1, 0)


async def test_competing_claimers_each_get_a_distinct_item(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx)
    tasks = [asyncio.create_task(cell.claim(f"w{i}", now=0)) for i in range(3)]
    await asyncio.sleep(0)
    for v in "abc":
        cell.try_push(v)
    deliveries = await asyncio.wait_for(asyncio.gather(*tasks), 2)
    assert sorted(d.value for d in deliveries) == ["a", "b", "c"]
    assert sorted(d.delivery_id for d in deliveries) == [0, 1, 2]


async def test_awaitables_on_local_storage(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, max_deliveries=1, context=ctx, name="jobs",
                         clock=lambda: 7)
    assert await cell.push("a") == 0
    d = await cell.poll("w", 0)
    assert d is not None and await cell.extend("w", d.delivery_id, 10) is None
    assert await cell.reap_expired(15) == 0
    nacked = await cell.nack("w", d.delivery_id)
    assert nacked == Receipt("jobs", d.delivery_id, 0, "w", "nacked", 7)
    assert await cell.redrive() == 1
    d = await cell.claim("w", now=0)
    assert await cell.ack("w", d.delivery_id) == Receipt("jobs", d.delivery_id, 0, "w",
                                                         "acked", 7)
    assert await cell.poll("w", 0) is None  # poll does not wait


async def test_a_refused_settlement_raises_on_every_path(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, context=ctx, name="jobs")
    cell.try_push("a")
    d = cell.try_claim("w", 0)
    assert d is not None
    probes = Probes(cell)
    refused = [
        lambda: cell.try_ack("other", d.delivery_id),
        lambda: cell.try_nack("w", 99),
        lambda: cell.try_extend("other", d.delivery_id, 1),
    ]
    for call in refused:
        with pytest.raises(SettlementRejected, match=r"jobs: .* by .* was refused"):
            call()
    for awaitable in (cell.ack("other", d.delivery_id), cell.nack("w", 99),
                      cell.extend("other", d.delivery_id, 1)):
        with pytest.raises(SettlementRejected, match="the lease is gone"):
            await awaitable
    assert probes.changed() == set() and probes.waves == 0  # refusals change nothing
    cell.try_ack("w", d.delivery_id)
    with pytest.raises(SettlementRejected, match="ack of delivery 0 by 'w' was refused"):
        await cell.ack("w", d.delivery_id)  # a local backend keeps no receipts


# -- backends without sync, and observable ones ---------------------------------------


class ObservedWork(LocalWorkQueueStorage):
    """A local core that reports every mask, as a replica applying entries would."""

    capabilities = StorageCapabilities(sync=True, observable=True)

    def __init__(self, *args: Any) -> None:
        super().__init__(WorkQueueCore(*args))
        self.listener: Any = None

    def set_change_listener(self, listener: Any) -> None:
        self.listener = listener

    def _report(self, step: WorkTransition[Any]) -> WorkTransition[Any]:
        if step.mask and self.listener is not None:
            self.listener(step.mask)
        return step


for _op in ("try_push", "try_claim", "try_settle", "try_reap_expired", "try_extend",
            "try_redrive"):
    def _reporting(self: ObservedWork, *args: Any, _op: str = _op) -> Any:
        return self._report(getattr(LocalWorkQueueStorage, _op)(self, *args))
    setattr(ObservedWork, _op, _reporting)


class ReplicatedWork:
    """A fake replicated backend (observable and stamping its own time, no ``sync``):
    views of the replica, operations that commit a loop turn later."""

    capabilities = StorageCapabilities(observable=True, own_clock=True)

    def __init__(self, *args: Any) -> None:
        self.replica = ObservedWork(*args)
        self.commits = 0
        self.now = 0

    def __getattr__(self, name: str) -> Any:  # the views and the listener
        return getattr(self.replica, name)

    async def _commit(self, op: str, *args: Any) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        return getattr(self.replica, op)(*args)

    async def push(self, value: Any, *, timeout: float | None = None) -> Any:
        return await self._commit("try_push", value)

    async def poll(self, worker: str, now: Any, *, timeout: float | None = None) -> Any:
        return await self._commit("try_claim", worker, self.now if now is None else now)

    async def poll_many(self, worker: str, n: int, now: Any, *,
                        timeout: float | None = None) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        at = self.now if now is None else now
        return self.replica._report(self.replica.core.claim_many(worker, at, n))

    async def settle(self, worker: str, delivery_id: int, outcome: Any, *,
                     timeout: Any = None) -> Any:
        return await self._commit("try_settle", worker, delivery_id, outcome)

    async def release(self, worker: str, delivery_ids: list[int], *,
                      timeout: Any = None) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        return self.replica._report(self.replica.core.release(worker, delivery_ids))

    async def reap_expired(self, now: Any, *, timeout: Any = None) -> Any:
        return await self._commit("try_reap_expired", self.now if now is None else now)

    async def extend(self, worker: str, delivery_id: int, now: Any, *,
                     timeout: Any = None) -> Any:
        return await self._commit("try_extend", worker, delivery_id,
                                  self.now if now is None else now)

    async def redrive(self, item_ids: Any = None, *, timeout: Any = None) -> Any:
        return await self._commit("try_redrive", item_ids)


def test_observable_storage_invalidates_from_reports_only(ctx: Context) -> None:
    storage = ObservedWork(10, 3)
    cell = WorkQueueCell(storage, context=ctx)
    probes = Probes(cell)
    cell.try_push("a")
    assert probes.waves == 1 and probes.changed() == {"pending_len", "is_empty"}
    probes.mark()
    storage.try_claim("remote", 0)  # a transition the shell did not make
    assert probes.changed() == {"pending_len", "is_empty", "in_flight_len"}
    assert probes.views[-1] == (0, True, 1, 0)


async def test_a_backend_without_sync_refuses_try_and_serves_the_awaitables(
    ctx: Context,
) -> None:
    storage = ReplicatedWork(10, 2)
    cell = WorkQueueCell(storage, context=ctx)
    for call, awaitable in ((lambda: cell.try_push("a"), "push(value)"),
                            (lambda: cell.try_claim("w", 0), "poll(worker)"),
                            (lambda: cell.try_ack("w", 0), "ack(worker, delivery_id)"),
                            (lambda: cell.try_nack("w", 0), "nack(worker, delivery_id)"),
                            (lambda: cell.try_reap_expired(0), "reap_expired(now)"),
                            (lambda: cell.try_extend("w", 0, 0), "extend(worker, delivery_id)"),
                            (lambda: cell.try_redrive(), "redrive(item_ids)")):
        with pytest.raises(UnsupportedOperation, match=re.escape(f"await work_queue.{awaitable}")):
            call()
    probes = Probes(cell)
    waiter = asyncio.create_task(cell.claim("w", now=1))
    await asyncio.sleep(0)
    assert await cell.push("job") == 0
    d = await asyncio.wait_for(waiter, 2)
    assert (d.value, d.deadline) == ("job", 11)
    assert await cell.extend("w", d.delivery_id, 5) is None
    assert await cell.reap_expired(16) == 1
    d = await cell.claim("w", now=20)
    assert (await cell.nack("w", d.delivery_id)).outcome == "nacked"
    assert await cell.redrive([0]) == 1
    storage.now = 30
    d = await cell.claim("w")  # no clock: the backend stamps its own time
    assert d.deadline == 40
    assert (await cell.ack("w", d.delivery_id)).outcome == "acked"
    with pytest.raises(SettlementRejected):
        await cell.ack("w", d.delivery_id)
    assert probes.views[-1] == (0, True, 0, 0)
    assert storage.commits == 10


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
    storage = ObservedWork(10, mx) if observed else LocalWorkQueueStorage(WorkQueueCore(10, mx))
    cell = WorkQueueCell(storage, context=ctx)
    model = WorkModel(10, mx)
    probes = Probes(cell)
    for op in ops:
        probes.mark()
        with contextlib.suppress(SettlementRejected):
            getattr(cell, op[0] if op[0] == "try_claim" else f"try_{op[0]}")(*op[1:])
        _, mask = getattr(model, "claim" if op[0] == "try_claim" else op[0])(*op[1:])
        assert probes.changed() == {k for k, bit in BITS.items() if mask & bit}, op
        assert probes.waves == (1 if mask else 0)
        assert probes.views[-1] == tuple(model.reads()[k] for k in KINDS)


# -- jobs follow the cell's settlement rule --------------------------------------------


async def test_job_settles_once_and_refusals_raise_like_the_cell(ctx: Context) -> None:
    cell = WorkQueueCell(visibility_timeout=5, max_deliveries=2, context=ctx, name="jobs")
    cell.try_push("a")
    cell.try_push("b")
    jobs = cell.deliveries("w", now=0)
    job = await anext(jobs)
    async with job:
        await job.extend(now=3)
    assert job.receipt == Receipt("jobs", 0, 0, "w", "acked", 0.0)
    assert await job.ack() is job.receipt  # settled once; the same receipt again
    with pytest.raises(SettlementRejected, match="already acked"):
        await job.nack()
    late = await anext(jobs)
    assert cell.try_reap_expired(6) == 1  # its lease expired and the item went back
    with pytest.raises(SettlementRejected, match="the lease is gone"):
        await late.extend(now=6)
    with pytest.raises(SettlementRejected, match="ack of delivery 1 by 'w' was refused"):
        await late.ack()
    assert not late.settled
    with pytest.raises(ValueError, match="boom"):  # the refused release is not raised
        async with late:
            raise ValueError("boom")
    with pytest.raises(SettlementRejected):  # the ack on leaving normally is
        async with late:
            pass
    assert late.receipt is None
    await jobs.aclose()


# -- batches: claim_many, release and prefetching deliveries ----------------------------


async def test_claim_many_waits_then_leases_up_to_n_in_one_commit(ctx: Context) -> None:
    storage = ReplicatedWork(10, 3)
    cell = WorkQueueCell(storage, context=ctx)
    waiter = asyncio.create_task(cell.claim_many("w", 3))
    await asyncio.sleep(0)
    await cell.push("a")
    assert [d.value for d in await asyncio.wait_for(waiter, 2)] == ["a"]
    for v in "bc":
        await cell.push(v)
    commits = storage.commits
    assert [(d.value, d.worker) for d in await cell.poll_many("w", 5)] == [("b", "w"), ("c", "w")]
    assert storage.commits == commits + 1
    assert await cell.poll_many("w", 5) == []
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        await cell.poll_many("w", 0)
    local = WorkQueueCell(visibility_timeout=5, context=ctx)
    for v in "xyz":
        local.try_push(v)
    assert [d.value for d in await local.claim_many("w", 2, now=0)] == ["x", "y"]
    assert await local.release("w", [d.delivery_id for d in local.in_flight()]) == 2
    assert [(p.value, p.attempts) for p in local.pending()] == [("x", 0), ("y", 0), ("z", 0)]


async def test_prefetching_deliveries_ack_in_the_background_and_release_the_rest(
    ctx: Context,
) -> None:
    storage = ReplicatedWork(10, 3)
    cell = WorkQueueCell(storage, context=ctx)
    for v in "abcdef":
        await cell.push(v)
    jobs = cell.deliveries("w", prefetch=4)
    started = []
    for _ in range(2):
        job = await anext(jobs)
        async with job:
            started.append(job)
    assert cell.in_flight_len() >= 3  # the batch of four is leased as one claim
    await jobs.aclose()
    assert [j.receipt.outcome for j in started if j.receipt] == ["acked", "acked"]
    assert cell.in_flight_len() == 0
    # The two prefetched jobs never handed out went back to the head, uncounted.
    assert [(p.value, p.attempts) for p in cell.pending()] == [
        ("c", 0), ("d", 0), ("e", 0), ("f", 0)]


async def test_a_refused_background_ack_is_raised_by_the_iterator(ctx: Context) -> None:
    storage = ReplicatedWork(10, 3)
    cell = WorkQueueCell(storage, context=ctx)
    for v in "ab":
        await cell.push(v)
    jobs = cell.deliveries("w", prefetch=2)
    for _ in range(2):
        job = await anext(jobs)
        await storage.settle("w", job.delivery.delivery_id, "nacked")  # someone else settles
        async with job:
            pass
    with pytest.raises(SettlementRejected, match="ack of delivery"):
        await anext(jobs)


class BatchSettlingWork(ReplicatedWork):
    """A fake replicated backend that also settles several deliveries in one commit, and
    records the order in which operations were proposed."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.proposed: list[tuple[str, int]] = []

    async def poll_many(self, worker: str, n: int, now: Any, *,
                        timeout: float | None = None) -> Any:
        self.proposed.append(("claim", n))
        return await super().poll_many(worker, n, now)

    async def settle(self, worker: str, delivery_id: int, outcome: Any, *,
                     timeout: Any = None) -> Any:
        self.proposed.append(("settle", 1))
        return await super().settle(worker, delivery_id, outcome)

    async def settle_many(self, worker: str, delivery_ids: list[int], outcome: Any, *,
                          timeout: Any = None) -> Any:
        self.proposed.append(("settle_many", len(delivery_ids)))
        await asyncio.sleep(0)
        self.commits += 1
        receipts, mask = [], 0
        for delivery_id in delivery_ids:
            receipt, moved = self.replica.try_settle(worker, delivery_id, outcome)
            receipts.append(receipt)
            mask |= moved
        return WorkTransition(receipts, mask)


async def test_the_acks_of_one_loop_turn_are_one_operation_proposed_with_the_next_claim(
    ctx: Context,
) -> None:
    # Claims commit far slower than four jobs are handed out, so the next claim is as
    # large as the first (the sizing adapts to that ratio).
    storage = SlowClaims(0.05)
    cell = WorkQueueCell(storage, context=ctx)
    for v in "abcdefg":
        await cell.push(v)
    jobs = cell.deliveries("w", prefetch=4)
    done = []
    for _ in range(5):  # the first batch of four in one loop turn, then the next claim
        job = await anext(jobs)
        async with job:
            done.append(job)
    # The four acks are one operation, proposed in the same loop turn as the next claim.
    assert storage.proposed[0] == ("claim", 4)
    assert sorted(storage.proposed[1:]) == [("claim", 4), ("settle_many", 4)]
    assert all(j.receipt is not None and j.receipt.outcome == "acked" for j in done[:4])
    await jobs.aclose()
    assert done[4].receipt is not None
    assert [p.value for p in cell.pending()] == ["f", "g"]
    assert cell.in_flight_len() == 0
    assert await cell.ack_many("w", [0]) == [None]  # already settled: refused


async def test_a_refused_ack_in_a_batch_raises_from_the_iterator(ctx: Context) -> None:
    storage = BatchSettlingWork(10, 3)
    cell = WorkQueueCell(storage, context=ctx)
    for v in "abc":
        await cell.push(v)
    jobs = cell.deliveries("w", prefetch=2)
    first = await anext(jobs)
    await storage.settle("w", first.delivery.delivery_id, "nacked")  # someone else settles
    async with first:
        pass
    async with await anext(jobs) as second:
        pass
    with pytest.raises(SettlementRejected, match="ack of delivery 0 by 'w' was refused"):
        await anext(jobs)
    assert first.receipt is None and second.receipt is not None
    assert cell.in_flight_len() == 0  # the claim that went with the acks was released


class SlowClaims(BatchSettlingWork):
    """Claims commit ``delay`` seconds after they are proposed."""

    def __init__(self, delay: float) -> None:
        super().__init__(1000, 3)
        self.delay = delay

    async def poll_many(self, worker: str, n: int, now: Any, *,
                        timeout: float | None = None) -> Any:
        await asyncio.sleep(self.delay)
        return await super().poll_many(worker, n, now)


async def test_deliveries_lease_more_while_the_worker_keeps_up_and_less_when_it_lags(
    ctx: Context,
) -> None:
    fast = SlowClaims(0.1)
    cell = WorkQueueCell(fast, context=ctx)
    for v in range(200):
        await cell.push(v)
    async with contextlib.aclosing(cell.deliveries("w", prefetch=40)) as jobs:
        for _ in range(16 + 32 + 40 + 1):
            async with await anext(jobs):
                pass
    assert [n for op, n in fast.proposed if op == "claim"] == [16, 32, 40, 40]
    slow = SlowClaims(0.001)
    cell = WorkQueueCell(slow, context=ctx)
    for v in range(100):
        await cell.push(v)
    async with contextlib.aclosing(cell.deliveries("w", prefetch=8)) as jobs:
        for _ in range(8 + 4 + 2 + 1):
            async with await anext(jobs):
                await asyncio.sleep(0.02)  # each job takes far longer than a claim commits
    assert [n for op, n in slow.proposed if op == "claim"] == [8, 4, 2, 1]
    assert cell.in_flight_len() == 0 and cell.pending_len() == 100 - 15


async def test_prefetched_jobs_whose_lease_ran_out_are_released_not_handed_out(
    ctx: Context,
) -> None:
    storage = ReplicatedWork(0.05, 1)
    cell = WorkQueueCell(storage, context=ctx)
    for v in "abc":
        await cell.push(v)
    jobs = cell.deliveries("w", prefetch=3)
    first = await anext(jobs)
    async with first:
        await asyncio.sleep(0.06)  # longer than the visibility timeout
    storage.now = 1  # so the claim below is not confused with an expired lease
    later = await asyncio.wait_for(anext(jobs), 2)
    # "b" and "c" were released at once (first attempts again) and claimed afresh.
    assert (later.value, later.delivery.attempt) == ("b", 1)
    await jobs.aclose()
    with pytest.raises(ValueError, match="prefetch must be an int >= 1"):
        await anext(cell.deliveries("w", prefetch=0))


class _RefusingNames(LocalWorkQueueStorage):
    __slots__ = ()

    def check_worker_name(self, worker: str) -> None:
        if worker.startswith("bad"):
            raise InvalidName(f"worker name {worker!r} is refused here")


async def test_a_claim_asks_the_storage_protocol_which_worker_names_it_takes() -> None:
    plain = LocalWorkQueueStorage(WorkQueueCore(30, 3))
    assert plain.check_worker_name("x" * 5000) is None  # the default takes every str
    assert not hasattr(plain, "__dict__")
    for serializer in (None, serializers.serializer(str.upper, str.lower)):  # its wrapper asks
        cell = WorkQueueCell(_RefusingNames(WorkQueueCore(30, 3)), serializer=serializer)
        with pytest.raises(InvalidName, match="'bad-1' is refused"):
            await cell.claim("bad-1", now=0)  # at once: nothing is pending to wait for
        with pytest.raises(InvalidName):
            cell.deliveries("bad-2")
        await cell.push("job")
        assert (await cell.claim("good", now=0, timeout=0)).value == "job"
