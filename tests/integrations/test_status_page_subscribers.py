"""The status page reaches every subscriber of a topic, not only the most lagging ones its
status lists: it pages through them by id or finds them by id prefix, says how many there
are and how many it shows, and deletes any of them (headless Chromium)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from lazily_queue import status, subscriber_listing, testing
from lazily_queue.integrations.aiohttp import setup

from .browser import artifacts_dir, browser, chromium, screenshot

TOKEN = "admin-token-for-tests-0123"
IDS = ("<b>x</b>", "s1", "s2", "s3", "s4")


def js(value: str) -> str:
    return json.dumps(value)


async def test_page_finds_and_deletes_a_subscriber_the_status_does_not_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chromium()
    monkeypatch.setattr(status, "MAX_SUBSCRIBERS_SHOWN", 2, raising=False)
    monkeypatch.setattr(subscriber_listing, "PAGE_SIZE", 2, raising=False)
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        app = web.Application()
        setup(app, node, status_prefix="", admin_token=TOKEN)
        async with TestServer(app) as server:
            for sid in IDS:
                await node.topic("news").subscribe(sid)
            core = node.view.topic("news")
            assert core is not None
            async with browser(str(server.make_url("/")), tmp_path / "profile") as page:
                await page.wait_for("[...document.getElementById('subscriber-topic').options]"
                                    ".some(o => o.value === 'news')")
                shown = await page.evaluate("[...document.getElementById('subscriber-select')"
                                            ".options].map(o => o.value)")
                assert '["news","s4"]' not in shown  # beyond the status' most lagging
                count = "document.getElementById('subscriber-count').textContent"
                rows = ("[...document.querySelectorAll('#subscribers tbody tr')]"
                        ".map(r => r.cells[0].textContent)")

                # Paging, without logging in: every subscriber is listed, as text.
                await page.evaluate("document.getElementById('subscriber-find').requestSubmit()")
                assert await page.wait_for(f"{count}.startsWith('showing') && {count}") == (
                    "showing 1-2 of 5 (5 subscribers in topic news)")
                assert await page.evaluate(rows) == ["<b>x</b>", "s1"]
                assert await page.evaluate("document.querySelectorAll('#subscribers b')"
                                           ".length") == 0
                assert await page.evaluate("document.querySelector('#subscribers button')"
                                           ".offsetParent") is None  # delete: admins only
                for expected in ("showing 3-4 of 5", "showing 5-5 of 5"):
                    await page.evaluate("document.getElementById('subscriber-next').click()")
                    await page.wait_for(f"{count}.startsWith({js(expected)})")
                assert await page.evaluate(rows) == ["s4"]
                assert await page.evaluate("document.getElementById('subscriber-next')"
                                           ".disabled") is True
                await page.evaluate("document.getElementById('subscriber-prev').click()")
                await page.wait_for(f"{count}.startsWith('showing 3-4 of 5')")

                # By id prefix, logged in: delete the one found after a confirming click.
                await page.evaluate(f"document.getElementById('admin-token').value = '{TOKEN}';"
                                    "document.getElementById('login-form').requestSubmit()")
                await page.wait_for("document.body.classList.contains('admin')")
                await page.evaluate(
                    "document.getElementById('subscriber-prefix').value = 's4';"
                    "document.getElementById('subscriber-find').requestSubmit()")
                await page.wait_for(f"{count}.includes('whose id')")
                assert await page.evaluate(count) == (
                    'showing 1-1 of 1 whose id starts with "s4" (5 subscribers in topic news)')
                button = "document.querySelector('#subscribers tbody button')"
                await page.evaluate(f"document.getElementById('admin-result').textContent = '';"
                                    f"{button}.click()")
                assert await page.evaluate(f"{button}.textContent") == (
                    "confirm delete subscriber?")
                assert "s4" in core.subscriptions()
                await page.evaluate(f"{button}.click()")
                result = await page.wait_for(
                    "document.getElementById('admin-result').textContent")
                assert result == "deleted subscriber s4 of topic news", result
                assert set(core.subscriptions()) == set(IDS) - {"s4"}
                assert await page.wait_for(f"{count}.includes('4 subscribers') && {count}") == (
                    'showing none of 0 whose id starts with "s4" (4 subscribers in topic news)')
                await page.evaluate("document.getElementById('subscriber-prefix').value = '';"
                                    "document.getElementById('subscriber-find').requestSubmit()")
                await page.wait_for(f"{count}.startsWith('showing 1-2 of 4')")
                await screenshot(page, artifacts_dir("status-page") / "subscribers.png")
