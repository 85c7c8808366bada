"""Replicated work queues and topics on a real in-process cluster."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from lazily_queue import Job, SettlementRejected, testing
from lazily_queue.reactive import Effect
from lazily_queue.replicated import work_queues


async def test_claims_are_exclusive_and_receipts_prove_settlement(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b, c = (n.work_queue("jobs", visibility_timeout=30) for n in cluster.nodes.values())
        await a.push("x")
        await a.push("y")
        first, second = await asyncio.gather(b.claim("bob"), c.claim("carol"))
        assert {first.value, second.value} == {"x", "y"}
        assert first.item_id != second.item_id
        assert await a.poll("alice") is None
        job = Job(b, first)
        receipt = await job.ack()
        assert (receipt.outcome, receipt.worker, receipt.duplicate) == ("acked", "bob", False)
        assert receipt.settled_at > 1_600_000_000_000  # the leader's wall clock, in ms
        # A retry of the same settlement (say, from a restarted worker) gets the original
        # receipt, marked duplicate; the core refused it, so nothing changed.
        retry = await c.ack("bob", first.delivery_id)
        assert retry.duplicate and retry.settled_at == receipt.settled_at
        assert (await b.storage.settle("bob", first.delivery_id, "acked")).mask == 0
        with pytest.raises(SettlementRejected, match="lease is gone"):
            await a.nack("bob", first.delivery_id)  # another outcome is no retry
        with pytest.raises(SettlementRejected, match="lease is gone"):
            await Job(c, first).nack()


async def test_a_repeated_settlement_is_proven_while_its_receipt_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work_queues, "RECEIPTS_KEPT", 4)  # every member runs in this process
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b = (n.work_queue("jobs", visibility_timeout=30)
                for n in list(cluster.nodes.values())[:2])
        for i in range(6):
            await a.push(i)
        deliveries = await a.claim_many("w", 6)
        for d in deliveries:
            await a.ack("w", d.delivery_id)
        # A restarted worker, through another member, repeats its last four acks and
        # the two before them: only the kept receipts prove the earlier settlements.
        for d in deliveries[2:]:
            retry = await b.ack("w", d.delivery_id)
            assert retry.duplicate and retry.item_id == d.item_id
        for d in deliveries[:2]:
            with pytest.raises(SettlementRejected, match="lease is gone"):
                await b.ack("w", d.delivery_id)


async def test_job_context_manager_acks_nacks_and_releases_on_cancel(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        node = (await cluster.followers())[0]
        wq = node.work_queue("jobs", visibility_timeout=30, max_deliveries=2)
        for value in ("ok", "fails", "cancelled"):
            await wq.push(value)
        outcomes: dict[str, str] = {}
        started = asyncio.Event()

        async def handle(job: Job) -> None:
            async with job:
                if job.value == "fails":
                    raise ValueError("boom")
                if job.value == "cancelled":
                    started.set()
                    await asyncio.sleep(30)

        jobs = wq.deliveries("w1")
        handled: list[Job] = []
        for _ in range(3):
            job = await jobs.__anext__()
            if job.value == "cancelled":
                task = asyncio.create_task(handle(job))
                await started.wait()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            else:
                expect = pytest.raises(ValueError) if job.value == "fails" else None
                with expect or contextlib.nullcontext():
                    await handle(job)
            handled.append(job)
        await jobs.aclose()  # the acks made in the background have committed
        for job in handled:
            assert job.receipt is not None
            outcomes[job.value] = job.receipt.outcome
        assert outcomes == {"ok": "acked", "fails": "nacked", "cancelled": "nacked"}
        await node.barrier()
        assert sorted(p.value for p in wq.pending()) == ["cancelled", "fails"]
        assert wq.in_flight_len() == 0


async def test_leader_reaps_expired_leases_and_dead_letters_can_be_redriven(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=0.05) as cluster:
        node = (await cluster.followers())[0]
        wq = node.work_queue("short", visibility_timeout=0.2, max_deliveries=1)
        await wq.push("slow")
        delivery = await wq.claim("sleepy")
        assert wq.in_flight_by_worker() == {"sleepy": [delivery]}
        seen: list[int] = []
        effect = Effect(lambda: seen.append(wq.dead_letter_len()), context=node.ctx)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if wq.dead_letter_len() == 1:
                break
        effect.dispose()
        assert seen[-1] == 1  # the reader updated reactively when the reap applied
        letter = wq.dead_letters()[0]
        assert (letter.value, letter.reason, letter.attempts) == ("slow", "expired", 1)
        with pytest.raises(SettlementRejected, match="lease is gone"):
            await wq.ack("sleepy", delivery.delivery_id)
        assert await wq.redrive() == 1
        await node.barrier()
        assert [p.value for p in wq.pending()] == ["slow"] and wq.dead_letter_len() == 0


async def test_lease_extension_keeps_a_long_job(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=0.05) as cluster:
        node = await cluster.leader()
        wq = node.work_queue("long", visibility_timeout=0.3)
        await wq.push("big")
        job = Job(wq, await wq.claim("w"))
        for _ in range(6):
            await asyncio.sleep(0.1)
            await job.extend()
        assert wq.in_flight_len() == 1 and wq.dead_letter_len() == 0 and wq.pending_len() == 0
        assert (await job.ack()).outcome == "acked"


async def test_work_queue_settings_must_match(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b = list(cluster.nodes.values())[:2]
        await a.work_queue("w", visibility_timeout=5).push(1)
        with pytest.raises(Exception, match="same settings"):
            await b.work_queue("w", visibility_timeout=6).push(1)


async def test_topic_durable_cursors_any_node_and_retention(tmp_path: Path) -> None:
    async with testing.cluster(
        data_dir=tmp_path, maintenance_interval=0.05, topic_gc_interval=0.05
    ) as c:
        nodes = list(c.nodes.values())
        topics = [n.topic("news") for n in nodes]
        await topics[0].subscribe("durable-a", "durable")
        await topics[1].subscribe("durable-b", "durable")
        await topics[2].subscribe("eph", "ephemeral")
        for i in range(5):
            await topics[i % 3].publish(i)
        got: dict[str, list[int]] = {"durable-a": [], "durable-b": [], "eph": []}

        async def read(topic_index: int, sub: str, n: int) -> None:
            # batch=1: the cursor moves past each element once the next is asked for
            stream = topics[topic_index].stream(sub, batch=1)
            async for value in stream:
                got[sub].append(value)
                if len(got[sub]) == n:
                    break
            await stream.aclose()

        # durable-a reads through a different node than the one it subscribed on.
        await asyncio.gather(read(2, "durable-a", 5), read(1, "durable-b", 2), read(0, "eph", 5))
        assert got == {"durable-a": [0, 1, 2, 3, 4], "durable-b": [0, 1], "eph": [0, 1, 2, 3, 4]}
        await topics[1].disconnect("durable-b")
        await topics[2].disconnect("eph")
        for _ in range(100):
            await asyncio.sleep(0.05)
            if topics[0].base_offset() > 0:
                break
        # The offline durable subscriber holds retention at its cursor; the leader
        # collected what every durable cursor had passed (the stream advances a read
        # element when the next one is asked for, so the last read stays unconsumed).
        frontier = nodes[0].status()["topics"]["news"]["subscribers"]["durable-b"]["cursor"]
        assert topics[0].base_offset() == frontier == 1
        await topics[1].reconnect("durable-b")
        rest: list[int] = []
        async for value in topics[1].stream("durable-b"):
            rest.append(value)
            if value == 4:
                break
        assert rest[-3:] == [2, 3, 4]
