"""Batching consumers on a real in-process cluster: what each one commits, what an early
stop gives back and what a crash costs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lazily_queue import NoQuorum, UnconfirmedAcks, testing
from lazily_queue.cells.job import Job
from lazily_queue.node import Node
from lazily_queue.reactive import wait_until


async def test_push_many_and_pop_many_commit_in_order(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        follower, other = await cluster.followers()
        q = follower.queue("orders")
        await q.push_many(range(10))
        assert await q.pop_many(4) == [0, 1, 2, 3]
        assert await other.queue("orders").pop_many(100) == [4, 5, 6, 7, 8, 9]
        waiter = asyncio.create_task(q.pop_many(3))
        await asyncio.sleep(0.05)
        assert not waiter.done()  # it waits for at least one element
        await other.queue("orders").push("late")
        assert await asyncio.wait_for(waiter, 5) == ["late"]


async def test_an_iteration_that_stops_early_puts_its_prefetch_back_in_order(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        q = (await cluster.followers())[0].queue("orders")
        await q.push_many(range(10))
        items = q.items(prefetch=6)
        assert [await anext(items), await anext(items)] == [0, 1]
        await leader.barrier()
        assert leader.queue("orders").len() == 4  # six were taken by one pop
        await items.aclose()
        await leader.barrier()
        assert leader.queue("orders").len() == 8
        async with asyncio.timeout(5):
            await q.close()
            assert [v async for v in q] == [2, 3, 4, 5, 6, 7, 8, 9]


async def test_a_crashed_consumer_loses_at_most_its_prefetch(tmp_path: Path) -> None:
    """Pops are at most once: the elements a dead process had prefetched are gone, and
    nothing else is."""
    async with testing.cluster(data_dir=tmp_path) as cluster:
        follower = (await cluster.followers())[0]
        q = follower.queue("orders")
        await q.push_many(range(10))
        items = q.items(prefetch=3)
        assert await anext(items) == 0
        await cluster.kill(follower.node_id)  # the process dies holding 1 and 2
        survivor = (await cluster.followers())[0] if (
            (await cluster.leader()).node_id == follower.node_id) else await cluster.leader()
        assert await survivor.queue("orders").pop_many(100) == [3, 4, 5, 6, 7, 8, 9]
        await items.aclose()  # its give-back fails on the dead node: logged, not raised


async def test_deliveries_claim_a_batch_and_release_what_they_did_not_start(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        wq = (await cluster.followers())[0].work_queue("jobs", visibility_timeout=30,
                                                       max_deliveries=1)
        for v in "abcdef":
            await wq.push(v)
        jobs = wq.deliveries("w1", prefetch=4)
        done = []
        for _ in range(2):
            job = await anext(jobs)
            async with job:
                done.append(job)
        await jobs.aclose()
        assert [(j.value, j.receipt and j.receipt.outcome) for j in done] == [
            ("a", "acked"), ("b", "acked")]
        await leader.barrier()
        view = leader.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
        # With max_deliveries=1 a counted lease would have dead-lettered c and d.
        assert [(p.value, p.attempts) for p in view.pending()] == [
            ("c", 0), ("d", 0), ("e", 0), ("f", 0)]
        assert view.in_flight_len() == 0 and view.dead_letter_len() == 0


async def test_background_acks_that_did_not_commit_raise_when_the_iteration_ends(
    tmp_path: Path,
) -> None:
    """Nothing is lost: the unconfirmed ack names its delivery, and its item stays leased."""
    async with testing.cluster(data_dir=tmp_path) as cluster:
        follower, jobs = await _deliveries_on_a_follower(cluster, "abcd", prefetch=4)
        job = await anext(jobs)
        cluster.isolate(follower.node_id)
        async with job:
            pass  # acked in the background, on a node that has lost its quorum
        with pytest.raises(UnconfirmedAcks) as raised:
            async with asyncio.timeout(30):
                await jobs.aclose()
        assert raised.value.delivery_ids == [job.delivery.delivery_id]
        assert (raised.value.cell, raised.value.worker) == ("jobs", "w1")
        assert isinstance(raised.value.__cause__, NoQuorum)
        assert "1 background ack(s)" in str(raised.value) and job.receipt is None
        cluster.heal()
        leader = await cluster.leader()
        await leader.barrier()
        view = leader.work_queue("jobs", visibility_timeout=30)
        # Still leased (the release of b, c and d failed too): redelivered when they expire.
        assert [d.value for d in view.in_flight()] == ["a", "b", "c", "d"]
        assert view.dead_letter_len() == 0


async def test_unconfirmed_acks_are_raised_in_place_of_the_claim_that_failed(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        follower, jobs = await _deliveries_on_a_follower(cluster, "abc", prefetch=2)
        first = await anext(jobs)
        cluster.isolate(follower.node_id)
        async with first:
            pass
        second = await anext(jobs)  # prefetched
        async with second:
            pass
        with pytest.raises(UnconfirmedAcks) as raised:
            async with asyncio.timeout(30):
                await anext(jobs)  # the claim of c fails on the isolated node
        assert raised.value.delivery_ids == [first.delivery.delivery_id,
                                             second.delivery.delivery_id]
        assert isinstance(raised.value.__context__, NoQuorum)
        await jobs.aclose()  # already ended: nothing more to report


async def _deliveries_on_a_follower(cluster: testing.Cluster, values: str, *, prefetch: int
                                    ) -> tuple[Node, AsyncIterator[Job]]:
    """``values`` pushed to work queue ``jobs`` (30 s leases) and worker ``w1``'s
    ``deliveries()`` on a follower."""
    follower = (await cluster.followers())[0]
    wq = follower.work_queue("jobs", visibility_timeout=30)
    for v in values:
        await wq.push(v)
    return follower, wq.deliveries("w1", prefetch=prefetch)


async def test_a_dead_workers_prefetched_jobs_are_redelivered_after_their_lease(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=0.05) as cluster:
        leader = await cluster.leader()
        follower = (await cluster.followers())[0]
        wq = follower.work_queue("jobs", visibility_timeout=0.3)
        for v in "abc":
            await wq.push(v)
        jobs = wq.deliveries("w1", prefetch=3)
        job = await anext(jobs)
        async with job:
            pass  # "a" is acked in the background...
        other = leader.work_queue("jobs", visibility_timeout=0.3)
        await wait_until(lambda: other.in_flight_len() == 2, context=leader.ctx, timeout=5)
        await cluster.kill(follower.node_id)  # ...and the process dies holding b and c
        async with asyncio.timeout(10):
            got = [await other.claim("w2") for _ in range(2)]
        assert sorted((d.value, d.attempt) for d in got) == [("b", 2), ("c", 2)]
        await jobs.aclose()


async def test_prefetched_jobs_about_to_expire_are_released_not_handed_out(
    tmp_path: Path,
) -> None:
    """The leader's leases count milliseconds; the consumer judges them in seconds."""
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        wq = leader.work_queue("jobs", visibility_timeout=0.5, max_deliveries=5)
        assert wq.lease_seconds == 0.5
        for v in "abc":
            await wq.push(v)
        jobs = wq.deliveries("w1", prefetch=3)
        first = await anext(jobs)
        prefetched = {d.value: d.delivery_id for d in wq.in_flight()}
        async with first:
            await asyncio.sleep(0.5)  # past nine tenths of b's and c's lease
        second = await anext(jobs)
        # b was given back and claimed again: a new lease, still its first attempt.
        assert second.value == "b" and second.delivery.attempt == 1
        assert second.delivery.delivery_id != prefetched["b"]
        await jobs.aclose()


async def test_stream_commits_the_cursor_per_batch_and_a_crash_redelivers_the_window(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        follower = (await cluster.followers())[0]
        topic = follower.topic("news")
        await topic.subscribe("r")
        for n in range(10):
            await leader.topic("news").publish(n)
        await follower.barrier()
        stream = topic.stream("r", batch=4)
        assert [await anext(stream) for _ in range(6)] == [0, 1, 2, 3, 4, 5]
        await leader.barrier()
        # The first batch's cursor move committed when the fifth element was asked for.
        assert leader.topic("news").read_stream("r") == [4, 5, 6, 7, 8, 9]
        node_id = follower.node_id
        await cluster.kill(node_id)  # dies holding 4 and 5, uncommitted
        restarted = await cluster.restart(node_id)
        await restarted.barrier()
        again = restarted.topic("news").stream("r", batch=4)
        async with asyncio.timeout(5):
            assert [await anext(again) for _ in range(6)] == [4, 5, 6, 7, 8, 9]
        await again.aclose()
        await stream.aclose()


async def test_a_batch_with_a_value_the_cluster_refuses_is_refused_whole(
    tmp_path: Path,
) -> None:
    from lazily_queue import Limits
    from lazily_queue.errors import MessageTooLarge, UnsupportedValue

    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        follower = (await cluster.followers())[0]
        q, w, t = follower.queue("q"), follower.work_queue("w"), follower.topic("t")
        await t.subscribe("s")
        for batch in ([1, 2, object(), 4], [1, 2, {"nested": {1, 2}}]):
            for push in (q.push_many, w.push_many, t.publish_many):
                with pytest.raises(UnsupportedValue):
                    await push(batch)
        too_large = b"x" * (follower.driver.replica.config.max_message_bytes + 1)
        for push in (q.push_many, w.push_many, t.publish_many):
            with pytest.raises(MessageTooLarge):
                await push(["a", too_large])
        await q.push_many(["after"])
        limited = Limits(max_length=100)  # pushed one by one: checked before the first
        lq, lw = follower.queue("lq", limits=limited), follower.work_queue("lw", limits=limited)
        lt = follower.topic("lt", limits=limited)
        for push in (lq.push_many, lw.push_many, lt.publish_many):
            with pytest.raises(UnsupportedValue):
                await push([1, object()])
        await leader.barrier()
        assert leader.queue("q").len() == 1
        assert leader.work_queue("w").pending_len() == 0
        assert leader.view.topics["t"].end_offset() == 0
        assert leader.view.queues.get("lq") is None or leader.view.queues["lq"].len() == 0
        assert leader.view.work_queues.get("lw") is None or (
            leader.view.work_queues["lw"].core.pending_len() == 0)
        assert leader.view.topics.get("lt") is None or leader.view.topics["lt"].end_offset() == 0
