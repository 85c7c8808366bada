"""``/metrics``, ``/status.json`` and ``/history.json`` are built without holding the
event loop (a member's heartbeats run on it): requests share a build, a slow build is
reused for a while, history builds run in turn and paced, the metrics are collected a
family at a time and formatted off the loop, and the status and the history list their
objects a slice at a time with the loop running between slices."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from lazily_queue import history, monitor_documents, object_listing, testing
from lazily_queue.monitor import Monitor
from lazily_queue.monitor_documents import (
    LOOP_SHARE,
    SLOW,
    PacedBuilds,
    ThrottledDocument,
    render_metrics,
)

pytestmark = pytest.mark.timeout(60)


class _Turns:
    """Counts the event loop's turns while it runs."""

    def __init__(self) -> None:
        self.count = 0
        self._handle: asyncio.Handle | None = None

    def __enter__(self) -> _Turns:
        self._tick()
        return self

    def _tick(self) -> None:
        self.count += 1
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.cancel()


class _Clock:
    """``time.monotonic`` as the test sets it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_requests_during_a_build_share_it_and_a_slow_one_is_reused_for_a_while(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(monitor_documents, "time", clock)

    async def build() -> bytes:
        await asyncio.sleep(0)
        clock.now += 2 * SLOW  # a slow build: reused for 4 times as long after it
        return f"document {document.builds + 1}".encode()

    document = ThrottledDocument(build)
    answers = await asyncio.gather(*(document.get() for _ in range(10)))
    assert set(answers) == {b"document 1"} and document.builds == 1
    clock.now += 7 * SLOW
    assert await document.get() == b"document 1"
    clock.now += 2 * SLOW
    assert await document.get() == b"document 2"


async def test_a_quick_build_is_never_reused() -> None:
    async def build() -> bytes:
        return str(document.builds).encode()

    document = ThrottledDocument(build)
    assert [await document.get() for _ in range(3)] == [b"0", b"1", b"2"]


async def test_a_failed_build_fails_its_requests_and_the_next_request_builds_again() -> None:
    calls = []

    async def build() -> bytes:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk")
        return b"ok"

    document = ThrottledDocument(build)
    with pytest.raises(OSError):
        await document.get()
    assert await document.get() == b"ok"


class _Families(Collector):
    def __init__(self, turns: _Turns, seen: list[int]) -> None:
        self.turns, self.seen = turns, seen

    def collect(self) -> Iterator[Metric]:
        for k in range(3):
            self.seen.append(self.turns.count)
            family = GaugeMetricFamily(f"family_{k}", "A family", labels=["name"])
            family.add_metric([f"n{k}"], k)
            yield family


async def test_metrics_are_collected_a_family_at_a_time_and_formatted_off_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    formatted_on: list[threading.Thread] = []
    original = monitor_documents.generate_latest

    def recorded(registry: Any) -> bytes:
        formatted_on.append(threading.current_thread())
        return original(registry)

    monkeypatch.setattr(monitor_documents, "generate_latest", recorded)
    seen: list[int] = []
    with _Turns() as turns:
        registry = CollectorRegistry()
        registry.register(_Families(turns, seen))
        body = await render_metrics(registry)
    assert seen[0] < seen[1] < seen[2]  # the loop turned between the families
    assert formatted_on and threading.main_thread() not in formatted_on
    assert body == generate_latest(registry)


async def test_the_status_document_ranks_a_slice_of_objects_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_listing, "SLICE", 10)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        await asyncio.gather(*(node.queue(f"q{k:02}").push(k) for k in range(45)))
        await node.work_queue("w").push(1)
        monitor = Monitor(node)
        turns_seen: list[int] = []
        monkeypatch.setattr(object_listing, "size_of",
                            _noting(object_listing.size_of, turns_seen, turns := _Turns()))
        with turns:
            document = json.loads(await monitor.status_document())
        expected = monitor.status()
        for doc in (document, expected):
            doc.pop("time")
            doc.pop("vitals", None)
            for member in doc["members"]:
                member.pop("vitals", None)
                member.pop("vitals_at", None)
        assert document == expected
        assert list(document) == list(expected)
        assert len(document["queues"]) == 45
        queue_turns = turns_seen[:45]
        assert len(set(queue_turns)) >= 5  # 45 queues in slices of 10


def _noting(entry: Any, seen: list[int], turns: _Turns) -> Any:
    def noted(name: str, found: Any) -> Any:
        seen.append(turns.count)
        return entry(name, found)
    return noted


async def test_history_builds_run_one_at_a_time_paced_after_a_slow_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Back-to-back requests for documents that differ by request (``/history.json``)
    are built in turn, and after a slow build the next waits until the builds took at
    most LOOP_SHARE of the time: strangers asking again and again cannot hold the loop."""
    clock = _Clock()
    monkeypatch.setattr(monitor_documents, "time", clock)
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        clock.now += delay
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    running, spans = [], []

    async def build() -> bytes:
        running.append(1)
        assert len(running) == 1  # never two at once
        start = clock.now
        for _ in range(3):
            await real_sleep(0)
        clock.now += 2 * SLOW
        spans.append((start, clock.now))
        running.pop()
        return b"doc"

    paced = PacedBuilds()
    assert await asyncio.gather(*(paced.run(build) for _ in range(4))) == [b"doc"] * 4
    assert paced.builds == 4
    for (_, ended), (started, _) in itertools.pairwise(spans):
        assert started - ended == pytest.approx(2 * SLOW * (1 / LOOP_SHARE - 1))


async def test_the_history_document_builds_a_slice_of_series_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "SLICE", 10)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        await asyncio.gather(*(node.queue(f"q{k:02}").push(k) for k in range(45)))
        monitor = Monitor(node)
        for t in range(3):
            monitor.history_source.sample(now=1000.0 + t)
        with _Turns() as turns:
            sliced = await monitor.history_source.document_sliced(1000.5)
        assert turns.count >= 5  # 45 series in slices of 10
        served = json.loads(await monitor.history_document(1000.5))
        expected = monitor.history(1000.5)
        for doc in (sliced, served, expected):
            doc.pop("now")
        assert sliced == served == expected
        assert len(expected["objects"]) == 45
        assert all(len(o["points"]) == 2 for o in expected["objects"].values())


async def test_listings_asked_together_are_built_a_turn_of_the_loop_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of ``/objects.json`` and ``/subscribers.json`` asked at once (a stranger's
    connections) are each built in a turn of the loop of its own, so the loop's timers
    (a member's heartbeats) run between them, not once all are built."""
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        await node.queue("q").push(1)
        await node.topic("t").subscribe("s")
        monitor = Monitor(node)
        seen: list[int] = []
        turns = _Turns()
        for name in ("objects", "subscribers"):
            monkeypatch.setattr(monitor, name, _counting(getattr(monitor, name), seen, turns))
        with turns:
            pages = await asyncio.gather(
                *(monitor.objects_document("queues") for _ in range(5)),
                *(monitor.subscribers_document("t") for _ in range(5)))
        assert len(set(seen)) == 10
        assert json.loads(pages[0]) == monitor.objects("queues")
        assert json.loads(pages[-1]) == monitor.subscribers("t")


def _counting(build: Any, seen: list[int], turns: _Turns) -> Any:
    def counted(*args: Any) -> Any:
        seen.append(turns.count)
        return build(*args)
    return counted
