"""Transactions: ack + push/publish elsewhere in one atomic step, on the local and the
replicated backends alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    Job,
    QueueCell,
    SettlementRejected,
    TopicCell,
    Transaction,
    TransactionAborted,
    TransactionError,
    TransactionUnsupported,
    WorkQueueCell,
    serializer,
    testing,
    transaction,
)
from lazily_queue.storage import VecDequeStorage

Cells = tuple[WorkQueueCell, QueueCell[Any], TopicCell[Any], WorkQueueCell,
              Callable[[], Transaction]]


@asynccontextmanager
async def _local() -> AsyncIterator[Cells]:
    clock = [0.0]
    yield (WorkQueueCell(visibility_timeout=30.0, clock=lambda: clock[0]),
           QueueCell(capacity=2), TopicCell(), WorkQueueCell(visibility_timeout=30.0),
           transaction)


@asynccontextmanager
async def _raft(members: int) -> AsyncIterator[Cells]:
    async with testing.cluster(members) as c:
        node = await c.leader()
        yield (node.work_queue("in"), node.queue("out", capacity=2), node.topic("audit"),
               node.work_queue("next"), node.transaction)


BACKENDS = {"local": _local, "raft1": lambda: _raft(1), "raft3": lambda: _raft(3)}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Callable[[], Any]:
    return BACKENDS[request.param]  # type: ignore[no-any-return]


async def _job(w: WorkQueueCell, value: Any = "job", worker: str = "w1") -> Job:
    await w.push(value)
    return Job(w, await w.claim(worker))


async def test_ack_and_produce_commit_together(backend: Callable[[], Any]) -> None:
    async with backend() as (w, q, t, nxt, tx_of):
        await t.subscribe("s")
        job = await _job(w, 20)
        async with tx_of() as tx:
            acked = tx.ack(job)
            pushed = tx.push(q, job.value * 2)
            published = tx.publish(t, {"done": job.value})
            queued = tx.push(nxt, job.value + 1)
            with pytest.raises(TransactionError, match="not committed"):
                _ = pushed.result
            assert q.len() == 0 and w.in_flight_len() == 1  # collected, not applied
        assert tx.state == "committed"
        assert acked.result.outcome == "acked" and job.receipt is acked.result
        assert pushed.result is None and published.result == 0 and queued.result == 0
        assert tx.results == [acked.result, None, 0, 0]
        assert w.in_flight_len() == 0 and w.pending_len() == 0
        assert q.len() == 1 and q.head() == 40
        assert t.read_stream("s") == [{"done": 20}]
        assert [p.value for p in nxt.pending()] == [21]


async def test_a_failing_op_applies_nothing_and_names_itself(backend: Callable[[], Any]) -> None:
    async with backend() as (w, q, t, _nxt, tx_of):
        job = await _job(w)
        await q.push("a")
        with pytest.raises(TransactionAborted) as caught:
            async with tx_of() as tx:
                tx.ack(job)
                tx.publish(t, "p")
                tx.push(q, "b")  # fills q
                tx.push(q, "c", msg_id="m-c")  # would overflow it
        err = caught.value
        assert (err.index, err.op, err.cell, err.code) == (3, "push", q.name, "full")
        assert tx.state == "aborted"
        assert w.in_flight_len() == 1 and q.len() == 1 and t.end_offset() == 0
        assert job.receipt is None
        # The id of the aborted push was not recorded; the job can still be acked.
        await q.push("c", msg_id="m-c")
        assert q.len() == 2
        await job.ack()


async def test_a_lease_no_longer_held_aborts(backend: Callable[[], Any]) -> None:
    async with backend() as (w, _q, _t, nxt, tx_of):
        job = await _job(w)
        await w.nack("w1", job.delivery.delivery_id)  # settled outside the transaction
        with pytest.raises(TransactionAborted) as caught:
            async with tx_of() as tx:
                tx.push(nxt, "x")
                tx.ack(job)
        assert caught.value.code == "not_leased" and caught.value.index == 1
        assert nxt.pending_len() == 0


async def test_a_closed_queue_aborts(backend: Callable[[], Any]) -> None:
    async with backend() as (_w, q, _t, nxt, tx_of):
        await q.close()
        with pytest.raises(TransactionAborted, match="closed"):
            async with tx_of() as tx:
                tx.push(nxt, "x")
                tx.push(q, "y")
        assert nxt.pending_len() == 0


async def test_an_exception_in_the_block_proposes_nothing(backend: Callable[[], Any]) -> None:
    async with backend() as (w, q, _t, _nxt, tx_of):
        job = await _job(w)
        with pytest.raises(KeyError):
            async with tx_of() as tx:
                tx.ack(job)
                tx.push(q, "x")
                raise KeyError("transform failed")
        assert tx.state == "discarded"
        assert q.len() == 0 and w.in_flight_len() == 1
        with pytest.raises(TransactionError, match="discarded"):
            tx.push(q, "late")


async def test_msg_ids_apply_once_inside_and_across_transactions(
        backend: Callable[[], Any]) -> None:
    async with backend() as (_w, _q, t, nxt, tx_of):
        for _ in range(2):
            async with tx_of() as tx:
                a = tx.publish(t, "e", msg_id="e-1")
                b = tx.publish(t, "e", msg_id="e-1")
                c = tx.push(nxt, "n", msg_id="n-1")
            assert a.result == b.result == 0 and c.result == 0
        assert t.end_offset() == 1 and nxt.pending_len() == 1
        assert await nxt.push("n", msg_id="n-1") == 0


async def test_a_job_settles_once(backend: Callable[[], Any]) -> None:
    async with backend() as (w, _q, _t, _nxt, tx_of):
        job = await _job(w)
        tx = tx_of()
        tx.ack(job)
        with pytest.raises(SettlementRejected):
            tx.nack(job)
        await tx.commit()
        with pytest.raises(SettlementRejected):
            tx_of().ack(job)
        async with job:  # the block sees the job settled and does not ack it again
            pass
        assert w.in_flight_len() == 0


async def test_a_nack_in_a_transaction_requeues(backend: Callable[[], Any]) -> None:
    async with backend() as (w, _q, _t, nxt, tx_of):
        job = await _job(w)
        async with tx_of() as tx:
            receipt = tx.nack(job)
            tx.push(nxt, "retry-noted")
        assert receipt.result.outcome == "nacked"
        assert [p.value for p in w.pending()] == ["job"]


async def test_an_empty_transaction_commits(backend: Callable[[], Any]) -> None:
    async with backend() as (_w, _q, _t, _nxt, tx_of):
        async with tx_of() as tx:
            pass
        assert tx.state == "committed" and tx.results == []


async def test_wrong_cells_and_ops_are_refused_where_added() -> None:
    local: QueueCell[Any] = QueueCell()
    async with testing.cluster(1) as c:
        node = await c.leader()
        tx = node.transaction()
        with pytest.raises(TransactionUnsupported, match="not one of"):
            tx.push(local, 1)
        with pytest.raises(TransactionUnsupported, match="in-process"):
            transaction().push(node.queue("q"), 1)
        with pytest.raises(TransactionUnsupported, match="publish"):
            tx.push(node.topic("t"), 1)  # type: ignore[arg-type]
        with pytest.raises(TransactionUnsupported, match="TopicCell"):
            tx.publish(node.queue("q"), 1)  # type: ignore[arg-type]

    class Other(VecDequeStorage[Any]):
        __slots__ = ()

    assert transaction().push(QueueCell(Other()), 1).kind == "push"  # a deque subclass


async def test_serializers_encode_transaction_values(backend: Callable[[], Any]) -> None:
    codec = serializer(lambda v: str(v).encode(), lambda b: int(b.decode()))
    async with backend() as (_w, *_rest, tx_of):
        if tx_of is transaction:
            out: QueueCell[Any] = QueueCell(name="ints", serializer=codec)
        else:
            out = tx_of.__self__.queue("ints", serializer=codec)  # type: ignore[attr-defined]
        async with tx_of() as tx:
            tx.push(out, 7)
            tx.push(out, 8, msg_id="eight")
        assert await out.pop() == 7 and await out.pop() == 8


async def test_local_readers_see_the_transaction_at_once() -> None:
    q: QueueCell[Any] = QueueCell()
    t: TopicCell[Any] = TopicCell()
    await t.subscribe("s")
    seen: list[tuple[int, int | None]] = []
    from lazily_queue.reactive import Effect

    effect = Effect(lambda: seen.append((q.len(), len(t.reader("s")() or []))))
    async with transaction() as tx:
        tx.push(q, 1)
        tx.publish(t, 2)
        tx.push(q, 3)
    effect.dispose()
    assert seen == [(0, 0), (2, 1)]


async def test_committed_transactions_survive_a_snapshot_and_a_restart(tmp_path: Any) -> None:
    from dataclasses import replace

    engine = replace(testing.FAST_ENGINE, compaction_min_entries=8, compaction_min_time=0.01)
    async with testing.cluster(1, data_dir=tmp_path, durability="fsync", engine=engine) as c:
        node = await c.leader()
        w, out = node.work_queue("in"), node.topic("out")
        for i in range(12):
            job = await _job(w, i)
            async with node.transaction() as tx:
                tx.ack(job)
                tx.publish(out, i * 10, msg_id=f"out-{i}")
        async with asyncio.timeout(30):  # snapshot files are written on a worker thread
            while node.status()["snapshots_taken"] < 1:
                await node.driver.next_step()
        before = node.view.capture()
        node = await c.restart(node.node_id)
        await c.wait_for_leader()
        await node.barrier()
        after = node.view.capture()
        for key in ("topics", "work_queues", "dedup"):
            assert after[key] == before[key]
        async with node.transaction() as tx:  # the ids are still in the window
            again = tx.publish(node.topic("out"), 110, msg_id="out-11")
        assert again.result == 11 and node.topic("out").end_offset() == 12


async def test_a_lease_is_settled_by_cell_worker_and_delivery_id(
        backend: Callable[[], Any]) -> None:
    async with backend() as (w, _q, _t, nxt, tx_of):
        job = await _job(w)
        tx = tx_of()
        acked = tx.ack(w, "w1", job.delivery.delivery_id)
        with pytest.raises(SettlementRejected, match="already settled"):
            tx.nack(w, "w1", job.delivery.delivery_id)
        with pytest.raises(TransactionUnsupported, match="delivery_id"):
            tx.ack(w, "w1", "7")  # type: ignore[arg-type]
        tx.push(nxt, "x")
        await tx.commit()
        assert acked.result.outcome == "acked" and acked.result.worker == "w1"
        assert w.in_flight_len() == 0 and nxt.pending_len() == 1
        with pytest.raises(TransactionAborted, match="not_leased"):
            async with tx_of() as again:
                again.ack(w, "w1", job.delivery.delivery_id)


async def test_a_job_whose_block_ack_is_queued_is_not_taken_again() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        w, out = node.work_queue("in"), node.queue("out")
        await w.push("a")
        await w.push("b")
        async for job in w.deliveries("w1"):
            async with job:  # ends normally: its ack is queued with the iteration's
                pass
            with pytest.raises(SettlementRejected, match="being acked"):
                node.transaction().ack(job)
            break
        async for job in w.deliveries("w1"):  # settled inside the block by a transaction
            async with job:
                async with node.transaction() as tx:
                    tx.ack(job)
                    tx.push(out, job.value)
            assert job.receipt is not None and job.receipt.outcome == "acked"
            break
        await node.barrier()
        assert out.len() == 1 and w.in_flight_len() == 0 and w.pending_len() == 0


async def test_a_transaction_over_the_command_limit_is_refused_unapplied() -> None:
    from lazily_queue import MessageTooLarge, UnsupportedValue

    async with testing.cluster(1, max_message_bytes=1024) as c:
        node = await c.leader()
        q = node.queue("q")
        with pytest.raises(MessageTooLarge):
            async with node.transaction() as tx:
                tx.push(q, "a")
                tx.push(q, b"x" * 70_000)
        assert tx.state == "failed"
        with pytest.raises(UnsupportedValue):
            async with node.transaction() as tx:
                tx.push(q, "a")
                tx.push(q, object())
        await node.barrier()
        assert q.len() == 0
