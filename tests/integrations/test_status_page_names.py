"""The status page administers objects and topic subscribers whatever their names: ``.``
and ``..`` are not resolved away by the browser when the page builds an admin URL
(headless Chromium)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer

from lazily_queue import testing
from lazily_queue.integrations.aiohttp import setup

from .browser import browser, chromium

TOKEN = "admin-token-for-tests-0123"
#: The page's script has run (its functions are defined once it has, as its form handlers
#: are attached): the login form exists before, and submitted then it navigates away.
SCRIPT_RAN = "typeof objectChoice === 'function'"


async def test_page_purges_objects_named_dot_and_dot_dot(tmp_path: Path) -> None:
    chromium()  # skip before starting anything when there is no browser
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        app = web.Application()
        setup(app, node, status_prefix="", admin_token=TOKEN)
        async with TestServer(app) as server:
            for name in (".", ".."):
                await node.queue(name).push(1)
            async with browser(str(server.make_url("/")), tmp_path / "profile") as page:
                await page.wait_for(SCRIPT_RAN)
                await page.evaluate(f"document.getElementById('admin-token').value = '{TOKEN}';"
                                    "document.getElementById('login-form').requestSubmit()")
                await page.wait_for("document.body.classList.contains('admin')")
                for name in (".", ".."):
                    option = f"queue:{name}"
                    await page.wait_for("[...document.getElementById('object-select').options]"
                                        f".some(o => o.value === '{option}')")
                    await page.evaluate(
                        f"document.getElementById('object-select').value = '{option}';"
                        "document.getElementById('admin-result').textContent = '';"
                        "document.querySelector('[data-action=purge]').click();"
                        "document.querySelector('[data-action=purge]').click();")
                    result = await page.wait_for(
                        "document.getElementById('admin-result').textContent")
                    assert result.startswith(f"purge queue {name}: "), result
                    assert node.queue(name).len() == 0, name


async def test_page_deletes_a_subscriber_after_confirming(tmp_path: Path) -> None:
    chromium()
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        app = web.Application()
        setup(app, node, status_prefix="", admin_token=TOKEN)
        async with TestServer(app) as server:
            for subscriber in (".", ".."):
                await node.topic("..").subscribe(subscriber)
            core = node.view.topic("..")
            assert core is not None
            async with browser(str(server.make_url("/")), tmp_path / "profile") as page:
                await page.wait_for(SCRIPT_RAN)
                await page.evaluate(f"document.getElementById('admin-token').value = '{TOKEN}';"
                                    "document.getElementById('login-form').requestSubmit()")
                await page.wait_for("document.body.classList.contains('admin')")
                option = '["..",".."]'
                await page.wait_for("[...document.getElementById('subscriber-select').options]"
                                    f".some(o => o.value === '{option}')")
                await page.evaluate(
                    f"document.getElementById('subscriber-select').value = '{option}';"
                    "document.getElementById('admin-result').textContent = '';"
                    "document.getElementById('subscriber-delete').click();")
                # The first click only arms the button: nothing is deleted yet.
                assert await page.evaluate(
                    "document.getElementById('subscriber-delete').textContent") == (
                    "confirm delete subscriber?")
                assert set(core.subscriptions()) == {".", ".."}
                await page.evaluate("document.getElementById('subscriber-delete').click()")
                result = await page.wait_for(
                    "document.getElementById('admin-result').textContent")
                assert result == "deleted subscriber .. of topic ..", result
                assert set(core.subscriptions()) == {"."}
