"""The status page's history: rates, depth, the age of the oldest item, bounded memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lazily_queue import admin, testing
from lazily_queue.history import History


def _last(history: History, key: str) -> dict[str, object]:
    doc = history.document()
    columns = doc["columns"]
    return dict(zip(columns, doc["objects"][key]["points"][-1], strict=True))


async def test_rates_depth_and_age_of_each_kind(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=None) as cluster:
        node = await cluster.leader()
        history = History(node, interval=1.0, window=10.0)
        orders = node.queue("orders")
        jobs = node.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
        news = node.topic("news")
        await news.subscribe("reader")
        for i in range(4):
            await orders.push(i)
            await jobs.push(i)
            await news.publish(i)
        history.sample(now=1000.0)  # these arrive "now" for the history: the floor
        for i in range(4, 10):
            await orders.push(i)
            await jobs.push(i)
            await news.publish(i)
        history.sample(now=1002.0)
        q = _last(history, "queue:orders")
        assert (q["in_rate"], q["out_rate"], q["depth"], q["lag"]) == (3.0, 0.0, 10, 10)
        assert q["oldest_age"] == 2.0  # item 0 was there at the first sample
        assert history.document()["objects"]["queue:orders"]["age_floor"] is True

        for _ in range(6):  # the oldest left is item 6, which arrived by t=1002
            await orders.pop()
        delivery = await jobs.claim("w")
        await jobs.ack("w", delivery.delivery_id)
        for _ in range(5):
            await news.advance("reader")
        history.sample(now=1005.0)
        q = _last(history, "queue:orders")
        assert (q["in_rate"], q["out_rate"], q["depth"]) == (0.0, 2.0, 4)
        assert q["oldest_age"] == 3.0
        assert history.document()["objects"]["queue:orders"]["age_floor"] is False
        w = _last(history, "work_queue:jobs")
        assert (w["depth"], w["lag"], w["dead_letters"]) == (9, 9, 0)
        assert round(w["out_rate"], 3) == round(1 / 3, 3)  # one ack in three seconds
        assert w["oldest_age"] == 5.0  # item 1 arrived before the first sample
        t = _last(history, "topic:news")
        assert (t["depth"], t["lag"]) == (10, 5)
        assert t["oldest_age"] == 3.0  # the reader's next element (5) arrived by t=1002

        await orders.pop()
        history.sample(now=1006.0)  # a drained queue has no oldest item
        for _ in range(3):
            await orders.pop()
        history.sample(now=1007.0)
        assert _last(history, "queue:orders")["oldest_age"] is None


async def test_memory_is_bounded_and_deleted_objects_are_dropped(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=None) as cluster:
        node = await cluster.leader()
        history = History(node, interval=1.0, window=5.0, max_objects=2)
        for name in ("a", "b", "c"):
            await node.queue(name).push(name)
        for step in range(50):
            await node.queue("a").push(step)
            history.sample(now=2000.0 + step)
        assert set(history.series) == {("queue", "a"), ("queue", "b")}
        assert history.untracked == 1
        assert all(len(s.samples) <= 6 and len(s.arrivals) <= 6
                   for s in history.series.values())
        assert len(history.cluster) <= 6
        doc = history.document(since=2046.5)
        assert [p[0] for p in doc["objects"]["queue:a"]["points"]] == [2047.0, 2048.0, 2049.0]
        await admin.delete(node, "queue", "a")
        history.sample(now=2050.0)
        assert ("queue", "a") not in history.series
        assert set(history.series) == {("queue", "b"), ("queue", "c")}


def test_interval_and_window_are_checked(tmp_path: Path) -> None:
    node = testing.cluster(data_dir=tmp_path).node(1)
    for interval, window in ((0, 10), (float("nan"), 10), (1, 0.5), (1, float("inf"))):
        with pytest.raises(ValueError):
            History(node, interval=interval, window=window)


async def test_a_sample_reads_only_the_objects_it_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client creating many objects makes each sample pass over their names, but the
    figures of only the ``max_objects`` followed are read."""
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=None) as cluster:
        node = await cluster.leader()
        history = History(node, interval=1.0, window=5.0, max_objects=3)
        for i in range(40):
            await node.queue(f"q{i:02d}").push(i)
        fifo = type(node.view.queues["q00"])
        read: list[str] = []
        length = fifo.len

        def counted(self: Any) -> int:
            read.append("len")
            return length(self)

        monkeypatch.setattr(fifo, "len", counted)
        history.sample(now=3000.0)
        assert len(read) == 3
        history.sample(now=3001.0)
        assert set(history.series) == {("queue", "q00"), ("queue", "q01"), ("queue", "q02")}
        assert history.untracked == 37
        assert _last(history, "queue:q01")["depth"] == 1
