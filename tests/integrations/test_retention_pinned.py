"""A durable subscriber that stops reading holds its topic's retention: the status, the
CLI and ``/metrics`` name it and say how many elements it keeps from being trimmed."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer
from rich.console import Console

from lazily_queue import status, testing
from lazily_queue.cli.status_view import render
from lazily_queue.integrations.aiohttp import setup
from lazily_queue.metrics import NodeMetrics

from .browser import browser, chromium

PINNED = "lazily_queue_topic_pinned_entries"


async def test_the_durable_subscriber_holding_retention_is_named(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node)
        news = node.topic("news")
        await news.subscribe("gone")
        await news.subscribe("live")
        await news.subscribe("eph", "ephemeral")
        for i in range(5):
            await news.publish(i)
        await news.disconnect("gone")
        for _ in range(5):
            await news.poll("live")
        await news.gc()
        topic = status.node_status(node)["topics"]["news"]
        assert topic["pinned_by"] == {"subscriber": "gone", "connected": False,
                                      "cursor": 0, "entries": 5}
        assert topic["retained"] == 5  # an ephemeral subscriber further behind pins nothing
        assert metrics.registry.get_sample_value(
            PINNED, {"name": "news", "subscriber": "gone"}) == 5
        console = Console(record=True, width=160)
        console.print(*render(status.node_status(node)))
        assert "gone (offline) pins 5" in console.export_text()


async def test_nothing_is_pinned_once_every_durable_subscriber_caught_up(
        tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        metrics = NodeMetrics(node)
        news = node.topic("news")
        await news.subscribe("a")
        await news.subscribe("eph", "ephemeral")
        await news.publish(1)
        await news.poll("a")
        topic = status.node_status(node)["topics"]["news"]
        assert topic["pinned_by"] is None
        body = metrics.render().decode()
        assert not [line for line in body.splitlines() if line.startswith(PINNED + "{")]


async def test_the_status_page_names_the_subscriber_holding_retention(tmp_path: Path) -> None:
    chromium()  # skip before starting anything when there is no browser
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        news = node.topic("news")
        await news.subscribe("gone")
        for i in range(3):
            await news.publish(i)
        await news.disconnect("gone")
        app = web.Application()
        setup(app, node, status_prefix="")
        async with TestServer(app) as server, \
                browser(str(server.make_url("/")), tmp_path / "profile") as page:
            await page.wait_for("[...document.querySelectorAll('#topics td')]"
                                ".some(td => td.textContent === 'gone (offline) pins 3')")
