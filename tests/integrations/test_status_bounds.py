"""A status stays cheap and small whatever the work queues hold: workers are counted up
to a bound of deliveries in flight, and only the busiest few are listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from lazily_queue import status, testing
from lazily_queue.cli.status_view import render
from lazily_queue.core.work_views import WorkViews
from lazily_queue.metrics import NodeMetrics


async def test_workers_listed_are_bounded(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "MAX_WORKERS_SHOWN", 2, raising=False)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        jobs = node.work_queue("jobs", visibility_timeout=60)
        for i in range(7):
            await jobs.push(i)
        for worker in ("a", "b", "b", "c", "c", "c"):
            await jobs.claim(worker)
        doc = status.node_status(node)
        entry = doc["work_queues"]["jobs"]
        assert entry["workers"] == {"b": 2, "c": 3} and entry["workers_total"] == 3
        console = Console(record=True, width=140)
        console.print(*render(doc))
        assert "b: 2, c: 3, ... 1 more" in console.export_text()


async def test_a_status_does_not_scan_a_huge_in_flight_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "MAX_WORKER_SCAN", 3, raising=False)
    scanned: list[int] = []
    for method in ("in_flight", "in_flight_by_worker"):
        original = getattr(WorkViews, method)

        def spy(self: WorkViews, _original=original) -> object:  # type: ignore[no-untyped-def]
            scanned.append(self.in_flight_len())
            return _original(self)

        monkeypatch.setattr(WorkViews, method, spy)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        jobs = node.work_queue("jobs", visibility_timeout=60)
        for i in range(4):
            await jobs.push(i)
            await jobs.claim(f"w{i}")
        scanned.clear()
        entry = status.node_status(node)["work_queues"]["jobs"]
        assert entry["in_flight"] == 4 and entry["workers"] == {}
        assert entry["workers_total"] is None and scanned == []


async def test_subscribers_listed_are_the_most_lagging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "MAX_SUBSCRIBERS_SHOWN", 2, raising=False)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node)
        news = node.topic("news")
        for reader in ("a", "b", "c"):
            await news.subscribe(reader)
        for i in range(3):
            await news.publish(i)
        await news.advance("a")
        await news.advance("a")
        await news.advance("c")
        doc = status.node_status(node)
        topic = doc["topics"]["news"]
        assert {k: v["lag"] for k, v in topic["subscribers"].items()} == {"b": 3, "c": 2}
        assert topic["subscribers_total"] == 3 and doc["totals"]["topic_lag"] == 3
        console = Console(record=True, width=140)
        console.print(*render(doc))
        assert "b (3), c (2), ... 1 more" in console.export_text()
        lag = "lazily_queue_topic_consumer_lag"
        body = metrics.render().decode()
        assert [line for line in body.splitlines() if line.startswith(lag + "{")] == [
            f'{lag}{{name="news",subscriber="b"}} 3.0', f'{lag}{{name="news",subscriber="c"}} 2.0']


async def test_groups_listed_of_a_topic_are_the_most_lagging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "MAX_SUBSCRIBERS_SHOWN", 2, raising=False)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        news = node.topic("news")
        groups = {name: news.group(name) for name in ("a", "b", "c")}
        for group in groups.values():
            await group.declare()
        for i in range(3):
            await news.publish(i)
        for name, acks in (("a", 2), ("c", 1)):
            for _ in range(acks):
                got = await groups[name].claim("w")
                await groups[name].ack("w", got.delivery_id)
        for doc in (status.node_status(node), await status.node_status_sliced(node)):
            topic = doc["topics"]["news"]
            assert {k: v["lag"] for k, v in topic["groups"].items()} == {"b": 3, "c": 2}
            assert topic["groups_total"] == 3
