"""``WorkQueueCell.push_many`` and ``TopicCell.publish_many``: in order, with their ids,
proposed together over a replicated backend (a member's or a client's), one after
another elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lazily_queue import (
    LimitExceeded,
    Limits,
    TopicCell,
    UnsupportedOperation,
    WorkQueueCell,
    testing,
)
from lazily_queue.node import Node
from lazily_queue.serializers import serializer
from lazily_queue.storage import replicated_object
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _batches(nodes: list[Node]) -> int:
    return sum(n.driver.replica.batches for n in nodes)


async def test_local_cells_push_and_publish_many_in_order() -> None:
    work: WorkQueueCell = WorkQueueCell(clock=lambda: 0.0)
    assert await work.push_many([]) == []
    ids = await work.push_many(["a", "b", "c"])
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert [(await work.claim("w")).value for _ in ids] == ["a", "b", "c"]
    topic: TopicCell[str] = TopicCell()
    topic.try_subscribe("s")
    assert await topic.publish_many(["x", "y"]) == [0, 1]
    assert topic.read_stream("s") == ["x", "y"]


async def test_a_member_proposes_them_together_in_order(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        follower = (await cluster.followers())[0]
        nodes = [cluster.node(i) for i in (1, 2, 3)]
        jobs = follower.work_queue("jobs")
        await jobs.push("warm")  # declared
        before = _batches(nodes)
        ids = await jobs.push_many(range(100))
        assert _batches(nodes) - before <= 2  # together, not 100 proposals
        assert ids == sorted(ids) and len(set(ids)) == 100
        claimed = [await jobs.claim("w") for _ in range(101)]
        assert [d.value for d in claimed] == ["warm", *range(100)]
        assert [d.item_id for d in claimed[1:]] == ids
        news = follower.topic("news")
        await news.subscribe("s")
        before = _batches(nodes)
        offsets = await news.publish_many([f"e{i}" for i in range(50)])
        assert _batches(nodes) - before <= 2
        assert offsets == list(range(offsets[0], offsets[0] + 50))
        await follower.barrier()
        assert news.read_stream("s") == [f"e{i}" for i in range(50)]


async def test_a_client_proposes_them_together_in_order() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        jobs = client.work_queue("jobs")
        await jobs.push("warm")  # declared, the link warm
        nodes = [c.node(i) for i in (1, 2, 3)]
        before = sum(n.driver.replica.proposals for n in nodes)
        ids = await jobs.push_many(range(200))
        proposed = sum(n.driver.replica.proposals for n in nodes) - before
        assert proposed * 4 <= 200, proposed  # sent together, so grouped by the member
        assert ids == sorted(ids) and len(set(ids)) == 200
        values = [(await jobs.claim("w")).value for _ in range(201)]
        assert values == ["warm", *range(200)]
        news = client.topic("news")
        await news.subscribe("s")
        offsets = await news.publish_many(["a", "b", "c"])
        assert offsets == [offsets[0], offsets[0] + 1, offsets[0] + 2]
        assert [await news.advance("s") for _ in range(3)] == ["a", "b", "c"]


async def test_a_group_refuses_them_and_limits_push_one_at_a_time(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        group = node.topic("events").group("billing")
        with pytest.raises(UnsupportedOperation, match="fed by its topic"):
            await group.push_many(["x"])
        bounded = node.work_queue("bounded", limits=Limits(max_length=2))
        with pytest.raises(LimitExceeded):
            await bounded.push_many(["a", "b", "c"], wait=False)
        assert bounded.pending_len() == 2  # those before the refusal were pushed
        assert [(await bounded.claim("w")).value for _ in range(2)] == ["a", "b"]


async def test_at_most_a_run_of_them_is_under_way_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replicated_object, "MANY_AT_ONCE", 50)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        jobs, news, orders = node.work_queue("jobs"), node.topic("news"), node.queue("orders")
        await news.subscribe("s")
        runs = _count_runs(node)
        assert await jobs.push_many(range(180)) == list(range(180))
        offsets = await news.publish_many(range(180))
        await orders.push_many(range(180))
        assert runs == [50, 50, 50, 30] * 3
        assert offsets == list(range(180))
        assert await orders.pop_many(500) == list(range(180))
        assert [await news.advance("s") for _ in range(180)] == list(range(180))


async def test_a_serializer_encodes_every_value_of_a_batch(tmp_path: Path) -> None:
    codec = serializer(lambda point: {"x": point[0]}, lambda doc: (doc["x"],))
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        jobs = node.work_queue("jobs", serializer=codec)
        news = node.topic("news", serializer=codec)
        orders = node.queue("orders", serializer=codec)
        await news.subscribe("s")
        assert await jobs.push_many([(1,), (2,)]) == [0, 1]
        assert await news.publish_many([(1,), (2,)]) == [0, 1]
        await orders.push_many([(1,), (2,)])
        assert [(await jobs.claim("w")).value for _ in range(2)] == [(1,), (2,)]
        assert [await news.advance("s") for _ in range(2)] == [(1,), (2,)]
        assert await orders.pop_many(5) == [(1,), (2,)]


def _count_runs(node: Node) -> list[int]:
    """The sizes of the runs of ops ``node``'s driver is given to propose together."""
    runs: list[int] = []
    original = node.driver.call_many

    async def counted(code: int, args: list[list[Any]], encoded: list[bytes], *,
                      timeout: float) -> list[Any]:
        runs.append(len(args))
        return await original(code, args, encoded, timeout=timeout)

    node.driver.call_many = counted  # type: ignore[method-assign]
    return runs
