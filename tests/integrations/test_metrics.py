"""Prometheus metrics of real in-process nodes: counters agree on every replica."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lazily_queue import testing
from lazily_queue.client.fair import QueuedTimeout
from lazily_queue.core.queue import QueuePopError
from lazily_queue.errors import SettlementRejected
from lazily_queue.metrics import COMMIT_KINDS, OP_KINDS, NodeMetrics
from lazily_queue.raft.errors import CommitTimeout, NoQuorum
from lazily_queue.reactive import wait_until
from lazily_queue.replicated import ops
from lazily_queue.status import node_status
from tests.clock import FakeClock


def value(metrics: NodeMetrics, metric: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(metric, labels)


async def test_operation_counters_and_gauges_on_every_replica(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    metrics = [NodeMetrics(node) for node in nodes]  # before start: per-node registries
    for node in nodes:
        await node.start()
    try:
        leader = await cluster.wait_for_leader()
        follower = next(n for n in nodes if n is not leader)
        q = follower.queue("orders")
        for i in range(3):
            await q.push(i)
        assert await q.pop() == 0
        await q.push("tomorrow", delay=86_400, headers={"k": "v"})  # delayed, not in depth
        jobs = follower.work_queue("jobs", visibility_timeout=0.3, max_deliveries=5)
        for i in range(4):
            await jobs.push(i)
        await jobs.push("tomorrow", delay=86_400)  # counted as delayed, not pending
        acked = await jobs.claim("w1")
        assert (await jobs.ack("w1", acked.delivery_id)).outcome == "acked"
        nacked = await jobs.claim("w1")
        assert (await jobs.nack("w1", nacked.delivery_id)).outcome == "nacked"
        await jobs.claim("w2")  # never settled: the leader's maintenance reaps it
        topic = leader.topic("news")
        await topic.subscribe("reader")
        await topic.publish("a")
        await topic.publish("b")
        await wait_until(lambda: jobs.in_flight_len() == 0, context=jobs.ctx, timeout=5)
        await cluster.settle()
        for m in metrics:
            ops = "lazily_queue_operations_total"
            assert value(m, ops, family="queue", name="orders", op="push") == 3
            assert value(m, ops, family="queue", name="orders", op="pop") == 1
            assert value(m, ops, family="work", name="jobs", op="push") == 5
            assert value(m, ops, family="work", name="jobs", op="claim") == 3
            assert value(m, ops, family="work", name="jobs", op="ack") == 1
            assert value(m, ops, family="work", name="jobs", op="nack") == 1
            assert value(m, ops, family="work", name="jobs", op="expire") == 1
            assert value(m, ops, family="topic", name="news", op="publish") == 2
            assert value(m, "lazily_queue_queue_depth", name="orders") == 2
            assert value(m, "lazily_queue_queue_delayed", name="orders") == 1
            assert value(m, ops, family="queue", name="orders", op="delay") == 1
            assert value(m, "lazily_queue_work_pending", name="jobs") == 3
            assert value(m, "lazily_queue_work_in_flight", name="jobs") == 0
            assert value(m, "lazily_queue_work_dead_letters", name="jobs") == 0
            assert value(m, "lazily_queue_work_delayed", name="jobs") == 1
            assert value(m, "lazily_queue_topic_consumer_lag", name="news",
                         subscriber="reader") == 2
            term = value(m, "lazily_queue_raft_term")
            assert term is not None and term >= 1
            assert value(m, "lazily_queue_raft_commit_index") == value(
                m, "lazily_queue_raft_last_applied")
        async with asyncio.timeout(5):  # the leader learns the followers' last acks
            while not all(m["lag"] == 0 for m in node_status(leader)["members"]):
                await leader.driver.next_step()
        lead = metrics[nodes.index(leader)]
        assert value(lead, "lazily_queue_raft_is_leader") == 1
        assert (value(lead, "lazily_queue_raft_leader_changes_total") or 0) >= 1
        for member in ("1", "2", "3"):
            assert value(lead, "lazily_queue_member_connected", member=member) == 1
            assert value(lead, "lazily_queue_member_lag_entries", member=member) == 0
        families = {f.name for f in text_string_to_metric_families(lead.render().decode())}
        assert {"lazily_queue_operations", "lazily_queue_fsync_seconds",
                "lazily_queue_queue_depth"} <= families
    finally:
        for node in nodes:
            await node.stop()


async def test_fsync_latency_histogram_with_fsync_durability(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path, durability="fsync")
    nodes = list(cluster.nodes.values())
    for node in nodes:
        await node.start()
    metrics = NodeMetrics(nodes[0])  # after start: attaches at once
    try:
        await cluster.wait_for_leader()
        for i in range(5):
            await nodes[0].queue("q").push(i)
        count = value(metrics, "lazily_queue_fsync_seconds_count")
        assert count is not None and count >= 5
        total = value(metrics, "lazily_queue_fsync_seconds_sum")
        assert total is not None and total > 0
    finally:
        for node in nodes:
            await node.stop()


def test_a_stopped_node_exports_only_counters(tmp_path: Path) -> None:
    node = testing.cluster(data_dir=tmp_path).node(1)
    text = NodeMetrics(node).render().decode()
    assert "lazily_queue_raft_term" not in text
    assert "# TYPE lazily_queue_operations_total counter" in text


async def test_metrics_of_a_node_holding_state_count_later_operations(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    for node in nodes:
        await node.start()
    try:
        await cluster.wait_for_leader()
        jobs = nodes[0].work_queue("jobs")
        await jobs.push("x")
        await cluster.settle()
        late = NodeMetrics(nodes[1])  # created on a node that already holds state
        await jobs.push("y")
        await cluster.settle()
        assert value(late, "lazily_queue_operations_total", family="work", name="jobs",
                     op="push") == 1
    finally:
        for node in nodes:
            await node.stop()


async def test_what_an_sre_alerts_on(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path, maintenance_interval=None)
    nodes = list(cluster.nodes.values())
    for node in nodes:
        await node.start()
    try:
        leader = await cluster.wait_for_leader()
        follower = next(n for n in nodes if n is not leader)
        m = NodeMetrics(follower)
        q = follower.queue("orders")
        await q.push(1)
        await q.push(2)
        assert await q.pop() == 1
        jobs = follower.work_queue("jobs", visibility_timeout=30)
        await jobs.push("a")
        delivery = await jobs.claim("w")
        await jobs.ack("w", delivery.delivery_id)
        with pytest.raises(SettlementRejected):
            await jobs.ack("other-worker", delivery.delivery_id)
        await jobs.push("b")
        batch = await jobs.claim("w")
        # One commit settling two: the second id is gone, so one settlement is refused.
        assert [r is None for r in await jobs.ack_many("w", [batch.delivery_id, 999])] == [
            False, True]
        await follower.topic("news").publish("x")
        for op, count in (("push", 4), ("pop", 1), ("claim", 2), ("ack", 3), ("publish", 1)):
            assert value(m, "lazily_queue_commit_seconds_count", op=op) == count, op
        assert value(m, "lazily_queue_commit_seconds_count", op="nack") == 0
        assert value(m, "lazily_queue_errors_total", kind="settlement_rejected") == 2
        assert value(m, "lazily_queue_errors_total", kind="no_quorum") == 0

        text = m.render().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        info = families["lazily_queue_node_info"].samples[0]
        assert info.labels == {"node": follower.node_id, "cluster": follower.cluster}
        build = families["lazily_queue_build_info"].samples[0]
        assert set(build.labels) == {"version", "python"} and build.value == 1
        states = {s.labels["state"]: s.value for s in families["lazily_queue_raft_state"].samples}
        assert states == {"leader": 0, "follower": 1, "candidate": 0}
        assert value(m, "lazily_queue_raft_leader_id") == int(leader.node_id)
        free = value(m, "lazily_queue_disk_free_bytes")
        assert free is not None and 0 < free <= (value(m, "lazily_queue_disk_total_bytes") or 0)
        assert value(m, "lazily_queue_refused_handshakes_total") is not None
        assert value(m, "lazily_queue_evicted_connections_total") == 0
        assert (value(m, "process_resident_memory_bytes") or 0) > 0
        assert (value(m, "process_open_fds") or 0) > 0

        # Without a majority, an operation fails with NoQuorum or CommitTimeout: counted.
        for other in nodes:
            if other is not follower:
                await other.stop()
        with pytest.raises((NoQuorum, CommitTimeout)):
            await follower.barrier(timeout=1.0)
        failed = sum(value(m, "lazily_queue_errors_total", kind=k) or 0
                     for k in ("no_quorum", "commit_timeout"))
        assert failed == 1
        states = {s.labels["state"]: s.value for s in text_string_to_metric_families(
            m.render().decode()) if s.name == "lazily_queue_raft_state" for s in s.samples}
        assert sum(states.values()) == 1  # the same three series, one of them 1
    finally:
        for node in nodes:
            await node.stop()


async def test_a_client_op_timed_out_in_the_members_queue_is_counted_as_such() -> None:
    """What the op scheduler reports of a client's op whose timeout passed before its
    turn counts as ``queued_timeout``, a series there from the first scrape."""
    async with testing.cluster(1) as cluster:
        node = next(iter(cluster.nodes.values()))
        m = NodeMetrics(node)
        m.render()
        assert value(m, "lazily_queue_errors_total", kind="queued_timeout") == 0
        observer = node.driver.call_observer
        assert observer is not None
        observer(ops.QUEUE_PUSH, 5.0, None, QueuedTimeout("queue_push waited for its turn "
                                                          "past its timeout", applied=False))
        observer(ops.QUEUE_PUSH, 5.0, None, CommitTimeout("did not commit", applied=None))
        assert value(m, "lazily_queue_errors_total", kind="queued_timeout") == 1
        assert value(m, "lazily_queue_errors_total", kind="commit_timeout") == 1
        assert value(m, "lazily_queue_commit_seconds_count", op="push") == 0


async def test_every_topic_publish_is_counted_with_or_without_subscribers() -> None:
    async with testing.cluster(3) as cluster:
        nodes = list(cluster.nodes.values())
        metrics = [NodeMetrics(node) for node in nodes]
        news = nodes[0].topic("news")

        async def published() -> list[float | None]:
            await cluster.settle()
            for m in metrics:
                m.render()  # a scrape
            return [value(m, "lazily_queue_operations_total", family="topic", name="news",
                          op="publish") for m in metrics]

        for i in range(5):  # nobody subscribed yet
            await news.publish(i)
        assert await published() == [5, 5, 5]
        await news.subscribe("reader")
        for i in range(3):
            await news.publish(i)
        assert await published() == [8, 8, 8]


async def test_a_push_answered_from_the_dedup_window_is_counted_on_every_replica() -> None:
    async with testing.cluster(3) as cluster:
        nodes = list(cluster.nodes.values())
        metrics = [NodeMetrics(node) for node in nodes]
        q, news = nodes[0].queue("orders"), nodes[1].topic("news")

        async def figures() -> list[tuple[float | None, float | None]]:
            await cluster.settle()
            return [(value(m, "lazily_queue_deduplicated_pushes_total"),
                     value(m, "lazily_queue_dedup_window_entries")) for m in metrics]

        await q.push("a", msg_id="m-1")
        await q.push("plain")  # no msg_id: not in the window
        assert await figures() == [(0, 1)] * 3
        await q.push("a", msg_id="m-1")  # a producer's retry: answered, not applied
        assert await news.publish("x", msg_id="m-1") == 0  # another cell: a new id
        assert await news.publish("x", msg_id="m-1") == 0
        assert await figures() == [(2, 2)] * 3
        assert await q.pop() == "a" and await q.pop() == "plain"
        for node in nodes:
            assert node.status()["dedup"] == {"deduplicated_pushes": 2, "window_len": 2}


async def test_transactions_are_counted_committed_or_aborted_on_every_replica() -> None:
    from lazily_queue import Job, TransactionAborted

    async with testing.cluster(3) as cluster:
        nodes = list(cluster.nodes.values())
        metrics = [NodeMetrics(node) for node in nodes]
        leader = await cluster.leader()
        jobs, out = leader.work_queue("jobs"), leader.queue("out", capacity=1)

        async def figures() -> list[tuple[float | None, float | None]]:
            await cluster.settle()
            return [(value(m, "lazily_queue_transactions_total", outcome="committed"),
                     value(m, "lazily_queue_transactions_total", outcome="aborted"))
                    for m in metrics]

        assert await figures() == [(0, 0)] * 3
        await jobs.push("j")
        job = Job(jobs, await jobs.claim("w"))
        async with leader.transaction() as tx:
            tx.ack(job)
            tx.push(out, "a")
        with pytest.raises(TransactionAborted):
            async with leader.transaction() as tx:
                tx.push(out, "b")
        assert await figures() == [(1, 1)] * 3
        assert {value(m, "lazily_queue_operations_total", family="queue", name="out",
                      op="push") for m in metrics} == {1}


async def test_expired_elements_are_counted_on_every_replica(wall: FakeClock) -> None:
    async with testing.cluster(3, maintenance_interval=None) as cluster:
        nodes = list(cluster.nodes.values())
        metrics = [NodeMetrics(node) for node in nodes]
        q, news = nodes[0].queue("orders", ttl=10.0), nodes[1].topic("news", max_age=10.0)
        await news.subscribe("reader")
        await q.push("a")
        await q.push("b", ttl=1.0)
        await news.publish("x")
        wall.now += 11
        assert await q.poll() is QueuePopError.Empty
        await news.publish("y")
        await cluster.settle()
        for m in metrics:
            assert value(m, "lazily_queue_expired_total", cell="orders", kind="queue") == 2
            assert value(m, "lazily_queue_expired_total", cell="news", kind="topic") == 1
            assert value(m, "lazily_queue_expired_unread_total", cell="news",
                         kind="topic") == 1


async def test_a_reject_topic_with_per_message_ttls_is_measured_on_every_replica(
        wall: FakeClock) -> None:
    from lazily_queue import LimitExceeded, Limits

    async with testing.cluster(3, maintenance_interval=None) as cluster:
        nodes = list(cluster.nodes.values())
        metrics = [NodeMetrics(node) for node in nodes]
        alerts = nodes[0].topic("alerts", limits=Limits(max_length=2))
        await alerts.subscribe("pager")
        await alerts.publish("ab", ttl=1.0)
        await alerts.publish("cde")
        with pytest.raises(LimitExceeded):
            await alerts.publish("f", wait=False)
        wall.now += 1
        await alerts.publish("f")  # "ab" expired at the head: room
        await cluster.settle()
        for m in metrics:
            assert value(m, "lazily_queue_cell_bytes", cell="alerts", kind="topic") == 4
            assert value(m, "lazily_queue_cell_limit", cell="alerts", kind="topic",
                         limit="max_length") == 2
            assert value(m, "lazily_queue_expired_total", cell="alerts", kind="topic") == 1
            assert value(m, "lazily_queue_dropped_total", cell="alerts", kind="topic",
                         reason="drop_oldest") in (None, 0)


async def test_limits_are_gauges_and_dropped_elements_a_counter_on_every_replica() -> None:
    from lazily_queue import Limits

    async with testing.cluster(3) as cluster:
        nodes = list(cluster.nodes.values())
        metrics = [NodeMetrics(node) for node in nodes]
        q = nodes[0].queue("recent", limits=Limits(max_length=2, max_bytes=64,
                                                   overflow="drop_oldest"))
        for word in ("a", "bb", "ccc", "dddd"):
            await q.push(word)
        await cluster.settle()
        for m in metrics:
            assert value(m, "lazily_queue_cell_bytes", cell="recent", kind="queue") == 7
            assert value(m, "lazily_queue_cell_limit", cell="recent", kind="queue",
                         limit="max_length") == 2
            assert value(m, "lazily_queue_cell_limit", cell="recent", kind="queue",
                         limit="max_bytes") == 64
            assert value(m, "lazily_queue_dropped_total", cell="recent", kind="queue",
                         reason="drop_oldest") == 2
        news = nodes[1].topic("news", limits=Limits(max_length=1, overflow="drop_oldest"))
        await news.publish("ab")
        await news.publish("cde")
        await cluster.settle()
        for m in metrics:
            assert value(m, "lazily_queue_dropped_total", cell="news", kind="topic",
                         reason="drop_oldest") == 1
            assert value(m, "lazily_queue_cell_bytes", cell="news", kind="topic") == 3
        jobs = nodes[2].work_queue("jobs", limits=Limits(max_length=1, overflow="drop_oldest"))
        await jobs.push("a")
        await jobs.push("bc")
        await cluster.settle()
        for m in metrics:
            assert value(m, "lazily_queue_dropped_total", cell="jobs", kind="work_queue",
                         reason="drop_oldest") == 1
            assert value(m, "lazily_queue_cell_bytes", cell="jobs", kind="work_queue") == 2


def test_every_op_code_is_timed_under_a_commit_kind() -> None:
    codes = {value for name, value in vars(ops).items()
             if name.isupper() and type(value) is int}
    assert codes <= set(OP_KINDS) and set(OP_KINDS.values()) <= set(COMMIT_KINDS)
    kinds = {code: OP_KINDS[code] for code in (
        ops.QUEUE_PUSH_OPTIONS, ops.WORK_PUSH_OPTIONS, ops.TOPIC_PUBLISH_OPTIONS,
        ops.QUEUE_POP_HEADERS, ops.QUEUE_PROMOTE, ops.WORK_DECLARE_OPTIONS)}
    assert list(kinds.values()) == ["push", "push", "publish", "pop", "other", "other"]
