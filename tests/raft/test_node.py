"""A replicated QueueCell on a real in-process cluster: the node API end to end."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from lazily_queue import (
    EMPTY,
    InvalidConfiguration,
    Limits,
    QueueClosed,
    QueuePopError,
    QueuePushError,
    UnsupportedOperation,
    testing,
)
from lazily_queue.node import ClusterMismatch, Node
from lazily_queue.raft.errors import NoQuorum, ProposalRejected
from lazily_queue.raft.network import LocalHub
from lazily_queue.reactive import Effect


async def test_push_on_a_follower_commits_and_every_node_updates(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        follower = (await cluster.followers())[0]
        queues = {n: node.queue("jobs") for n, node in cluster.nodes.items()}
        seen: dict[str, list[int]] = {n: [] for n in queues}
        effects = [
            Effect(lambda n=n, q=q: seen[n].append(q.len()), context=cluster.nodes[n].ctx)
            for n, q in queues.items()
        ]
        await follower.queue("jobs").push("a")
        await follower.queue("jobs").push("b")
        await cluster.settle()
        for n, q in queues.items():
            assert q.len() == 2 and q.head() == "a", n
            assert seen[n] == [0, 1, 2], n  # one rerun per applied push, on every node
        for e in effects:
            e.dispose()


async def test_fifo_across_producers_nodes_and_leader_failover(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        producer = (await cluster.followers())[0]
        q = producer.queue("jobs")
        for i in range(50):
            await q.push(i)
        leader = await cluster.leader()
        await cluster.kill(leader.node_id)
        await cluster.wait_for_leader()
        for i in range(50, 100):
            await q.push(i)
        out = [await q.pop() for _ in range(100)]
        assert out == list(range(100))


async def test_capacity_is_never_overcommitted(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        queues = [node.queue("bounded", capacity=5) for node in cluster.nodes.values()]
        results = await asyncio.gather(*(queues[i % 3].offer(i) for i in range(30)))
        assert results.count(None) == 5
        assert results.count(QueuePushError.Full) == 25
        await cluster.settle()
        assert all(q.len() == 5 and q.is_full() for q in queues)
        assert await queues[0].poll() is not None
        await cluster.settle()
        assert not queues[2].is_full()


async def test_capacity_mismatch_is_refused(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b = list(cluster.nodes.values())[:2]
        await a.queue("q", capacity=3).push(1)
        with pytest.raises(Exception, match="capacity 3, not 4"):
            await b.queue("q", capacity=4).push(1)


async def test_a_name_whose_declaration_was_refused_opens_again_with_its_settings(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b = list(cluster.nodes.values())[:2]
        await a.queue("q", capacity=3).push(1)
        await a.work_queue("w", visibility_timeout=10).push(1)
        await a.topic("t").publish(1)
        await cluster.settle()
        refused = b.queue("q", capacity=4)
        with pytest.raises(ProposalRejected, match="capacity_mismatch"):
            await refused.push(2)
        with pytest.raises(ProposalRejected, match="config_mismatch"):
            await b.work_queue("w", visibility_timeout=20).push(2)
        with pytest.raises(ProposalRejected, match="limits_mismatch"):
            await b.topic("t", limits=Limits(max_length=5)).publish(2)
        queue = b.queue("q", capacity=3)
        await queue.push(2)
        assert (queue.len(), queue.capacity()) == (2, 3)
        await b.work_queue("w", visibility_timeout=10).push(2)
        assert b.work_queue("w", visibility_timeout=10).pending_len() == 2
        assert await b.topic("t").publish(2) == 1
        with pytest.raises(ProposalRejected, match="capacity_mismatch"):
            await refused.push(3)  # the refused cell stays refused
        with pytest.raises(InvalidConfiguration, match="already open with capacity 3"):
            b.queue("q", capacity=4)  # an accepted cell keeps its settings


async def test_close_is_replicated(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        nodes = list(cluster.nodes.values())
        q0, q1 = nodes[0].queue("q"), nodes[1].queue("q")
        await q0.push("x")
        await q1.close()
        await cluster.settle()
        assert q0.is_closed() and q1.is_closed()
        with pytest.raises(QueueClosed):
            await q0.push("y")
        assert await q0.pop() == "x"
        with pytest.raises(QueueClosed):
            await q1.pop()
        assert await q0.poll() is QueuePopError.Closed


async def test_synchronous_core_names_the_awaitable(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        q, t, w = node.queue("q"), node.topic("t"), node.work_queue("w")
        for cell in (q, t, w):
            assert not cell.capabilities.sync and cell.capabilities.observable
        assert w.capabilities.own_clock and q.capabilities.peek
        with pytest.raises(UnsupportedOperation, match=re.escape(
                "use `await q.offer(value)` instead (or `await q.push(value)`, which waits)")):
            q.try_push(1)
        with pytest.raises(UnsupportedOperation, match=re.escape(
                "use `await q.poll()` instead (or `await q.pop()`, which waits)")):
            q.try_pop()
        with pytest.raises(UnsupportedOperation, match=r"await q\.close\(\)"):
            q.try_close()
        with pytest.raises(UnsupportedOperation, match=r"await t\.publish\(value\)"):
            t.try_publish(1)
        with pytest.raises(UnsupportedOperation, match=r"await w\.ack\(worker, delivery_id\)"):
            w.try_ack("x", 0)
        assert q.head() is EMPTY
        await q.offer(1)
        await t.publish(1)
        await w.push(1)
        assert (q.len(), t.end_offset(), w.pending_len()) == (1, 1, 1)


async def test_pop_waits_for_a_push_from_another_node(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b = list(cluster.nodes.values())[:2]
        waiter = asyncio.create_task(a.queue("q").pop(timeout=5))
        await asyncio.sleep(0)  # the pop proposes its first attempt
        await a.barrier()  # ... which has applied (an empty queue) by now: it waits
        assert not waiter.done()
        await b.queue("q").push("late")
        assert await waiter == "late"


async def test_barrier_gives_a_linearizable_read(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        a, b = list(cluster.nodes.values())[:2]
        qa, qb = a.queue("q"), b.queue("q")
        for i in range(10):
            await qa.push(i)
            await b.barrier()
            assert qb.len() == i + 1


async def test_minority_refuses_writes_then_rejoins(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path, op_timeout=3.0) as cluster:
        leader = await cluster.leader()
        loner = leader.node_id
        rest = [n for n in cluster.ids if n != loner]
        await leader.queue("q").push("before")
        cluster.partition({loner}, set(rest))
        with pytest.raises(NoQuorum, match="no quorum") as refused:
            await leader.queue("q").push("lost?")
        assert (  # the members it cannot reach, and the fix
            f"start the unreachable ones ({', '.join(sorted(rest))}) or mend the network "
            "to them") in str(refused.value), refused.value
        majority = await cluster.wait_for_leader(among=rest)
        await majority.queue("q").push("during")
        cluster.heal()
        await cluster.wait_for_leader()
        await cluster.settle()
        for node in cluster.nodes.values():
            assert node.view.queues["q"].elements() == ["before", "during"]


async def test_cancelled_pop_never_loses_the_element(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path, op_timeout=5.0) as cluster:
        leader = await cluster.leader()
        follower = (await cluster.followers())[0]
        q = follower.queue("q")
        await q.push("precious")
        await cluster.settle()
        # The pop reaches the leader, but the follower hears nothing back before it
        # is cancelled; the commit happens anyway.
        cluster.cut_one_way(leader.node_id, follower.node_id)
        pop = asyncio.create_task(q.pop())
        await asyncio.sleep(0.2)
        pop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pop
        cluster.heal()
        for _ in range(200):
            await asyncio.sleep(0.02)
            if leader.view.queues["q"].elements() == ["precious"]:
                break
        await cluster.settle()
        assert q.storage.orphans_returned == 1  # type: ignore[attr-defined]
        assert leader.queue("q").storage.elements() == ["precious"]  # type: ignore[attr-defined]
        assert await leader.queue("q").pop() == "precious"


async def test_a_pop_cancelled_as_it_commits_on_one_member_keeps_the_element(
        tmp_path: Path) -> None:
    # On a cluster of one the pop commits in the iteration it is proposed: the caller
    # that goes away then must not take the element with it.
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        q = cluster.running[0].queue("q")
        await q.push("precious")
        pop = asyncio.ensure_future(q.pop())
        await asyncio.sleep(0)
        pop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pop
        await q.push("second")
        await cluster.settle()
        for _ in range(100):
            if q.len() == 2:
                break
            await asyncio.sleep(0.01)
        assert await q.pop(timeout=0) == "precious"  # a timeout never cuts the pop itself
        assert await q.poll_many(10) == ["second"]


async def test_retried_proposals_apply_once(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        node = (await cluster.followers())[0]
        q = node.queue("q")
        await q.push("declare")
        replica = node.driver.replica
        from lazily_queue.replicated import ops as C

        done: list[object] = []
        answered = asyncio.Event()

        def record(r: object, e: object) -> None:
            done.append((r, e))
            answered.set()

        p = replica.propose(C.QUEUE_PUSH, ["q", "once"], timeout=5, on_done=record)
        node.driver.wake()
        await answered.wait()
        answered.clear()
        # Re-submit the very same proposal, as a retry after a lost answer would.
        p.done = False
        p.in_flight = False
        p.on_done = record
        replica._unresolved[p.seq] = p
        replica._queued.append(p)
        node.driver.wake()
        await answered.wait()
        await cluster.settle()
        assert node.view.queues["q"].elements() == ["declare", "once"]
        assert node.view.duplicate_ops >= 1


async def test_whole_cluster_restart_keeps_every_acknowledged_push(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path, durability="fsync")
    await cluster.start()
    q = (await cluster.leader()).queue("durable")
    for i in range(40):
        await q.push(i)
    await cluster.close()
    await cluster.start()
    node = await cluster.leader()
    await node.barrier()
    assert [await node.queue("durable").pop() for _ in range(40)] == list(range(40))
    await cluster.close()


async def test_compaction_bounds_the_log_and_a_lagging_follower_installs_a_snapshot(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    engine = replace(testing.FAST_ENGINE, compaction_min_entries=100, compaction_min_time=3600)
    async with testing.cluster(data_dir=tmp_path, engine=engine) as cluster:
        lagging = (await cluster.followers())[0].node_id
        await cluster.kill(lagging)
        q = (await cluster.leader()).queue("steady")
        for i in range(600):
            await q.push(i)
            assert await q.pop() == i
        await q.push("kept")
        leader = await cluster.leader()
        def bounded() -> bool:
            status = leader.status()
            return (status["snapshots_taken"] >= 3
                    and status["log_last_index"] - status["log_first_index"] < 250)

        # Snapshot files are written on a worker thread, while the log grows: the log is
        # cut once one has been written (on a loaded machine that may be a later one).
        async with asyncio.timeout(30):
            while not bounded():
                await leader.driver.next_step()
        rejoined = await cluster.restart(lagging, fresh=True)
        for _ in range(300):
            await asyncio.sleep(0.02)
            if rejoined.view.queues.get("steady") is not None:
                break
        await rejoined.barrier()
        assert rejoined.status()["snapshots_installed"] >= 1
        assert rejoined.queue("steady").storage.elements() == ["kept"]  # type: ignore[attr-defined]


async def test_membership_changes_and_leadership_transfer(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        leader = await cluster.leader()
        await leader.queue("q").push("before")
        newcomer = await cluster.add_member(4)  # started, then added by the leader
        await newcomer.barrier()
        assert newcomer.queue("q").storage.elements() == ["before"]  # type: ignore[attr-defined]
        assert sorted(leader.status()["members"]) == ["1", "2", "3", "4"]
        gone = next(n for n in ("1", "2", "3") if n != leader.node_id)
        await cluster.remove_member(gone)
        assert gone not in leader.status()["members"]
        new_leader = await leader.transfer_leadership()
        assert new_leader != leader.node_id
        await cluster.node(new_leader).queue("q").push("after")
        await newcomer.barrier()
        assert newcomer.queue("q").storage.elements() == ["before", "after"]  # type: ignore[attr-defined]


async def test_a_data_dir_belongs_to_one_node(tmp_path: Path) -> None:
    hub = LocalHub()
    async with Node(1, data_dir=tmp_path / "d", network=hub.network("1"), durability="none"):
        pass
    other = Node(2, data_dir=tmp_path / "d", network=hub.network("2"), durability="none")
    with pytest.raises(ClusterMismatch, match="belongs to node 1"):
        await other.start()


async def test_another_nodes_data_dir_is_refused_naming_the_file_that_says_so(
        tmp_path: Path) -> None:
    """The refusal names the metadata file it read the other identity from (the copy,
    when only that one is valid), both identities and the fix, and leaves the metadata
    as it was."""
    hub = LocalHub()
    async with Node(1, data_dir=tmp_path / "d", network=hub.network("1"), durability="none"):
        pass
    meta = tmp_path / "d" / "raft" / "journal.meta"
    for read in (meta, meta.with_name("journal.meta.b")):
        copies = sorted(meta.parent.glob("journal.meta*"))
        before = [path.read_bytes() for path in copies]
        other = Node(2, cluster="beta", data_dir=tmp_path / "d", network=hub.network("2"),
                     durability="none")
        with pytest.raises(ClusterMismatch) as refused:
            await other.start()
        assert str(refused.value) == (
            f"data directory {tmp_path / 'd'} belongs to node 1 of cluster 'lazily-queue' "
            f"(as {read} records), but this node's `id` and `cluster` are 2 and 'beta'; "
            "nothing was changed. Give every node its own data directory: set this node's "
            "`data_dir` to its own (an empty one for a new node), or, if this directory is "
            "its own, correct its `id` and `cluster`")
        assert [path.read_bytes() for path in copies] == before
        meta.write_bytes(b"damaged")  # the next start reads the copy


def test_fsync_durability_needs_a_data_dir() -> None:
    with pytest.raises(ValueError, match="data_dir is required"):
        Node(1, data_dir=None)
    with pytest.raises(ValueError, match="durability must be"):
        Node(1, data_dir=None, durability="sometimes")  # type: ignore[arg-type]


async def test_a_malformed_frame_closes_that_link_not_the_node(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import cbor2

    async with testing.cluster(data_dir=tmp_path) as cluster:
        node = (await cluster.followers())[0]
        other = next(n for n in cluster.ids if n != node.node_id)
        closed: list[tuple[str, str]] = []
        network = node.driver.network
        original = network.close_peer
        network.close_peer = lambda peer, why: (closed.append((peer, why)),  # type: ignore[method-assign]
                                                original(peer, why))
        for garbage in (b"\xff\x00", cbor2.dumps([{"type": "append_entries", "term": -1}]),
                        cbor2.dumps([{"type": "request_vote", "term": 1, "last_log_index": 1,
                                      "last_log_term": 1, "extra": "field"}])):
            node.driver._on_frame(other, garbage)
        assert node.driver.bad_frames == 3
        assert [peer for peer, _ in closed] == [other] * 3
        assert "malformed Raft frame" in closed[0][1]
        q = node.queue("still-works")
        await q.push("ok")
        assert await q.pop() == "ok"
