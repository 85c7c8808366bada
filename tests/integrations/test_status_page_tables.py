"""The status page shows the bounded tables of the applied state (size, bound, share
used, detail) and each work queue's receipts, following clients as they come and go,
and shows whatever a status holds there as text (headless Chromium)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from lazily_queue import ClientAccess, ClientGrant, connect
from lazily_queue.integrations.aiohttp import setup
from lazily_queue.monitor import PAGE_HEADERS, status_page
from lazily_queue.replicated.receipts import RECEIPTS_TOTAL
from lazily_queue.replicated.session_end import ENDED_KEPT
from lazily_queue.replicated.session_popped import ELEMENTS, SESSION_ELEMENTS
from lazily_queue.replicated.state_machine import MAX_CLIENT_SESSIONS
from lazily_queue.replicated.work_queues import RECEIPTS_KEPT
from lazily_queue.status import node_status
from tests.client.one_member import TOKEN, one_member

from .browser import artifacts_dir, browser, chromium, screenshot

ACCESS = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
ROWS = ("[...document.querySelectorAll('#bounded-tables tbody tr')]"
        ".map(r => [...r.cells].map(c => c.textContent))")


def _cells(rows: str, row: int, column: int) -> str:
    return f"({rows}[{row}] || [])[{column}]"


async def test_page_shows_the_bounded_tables_as_clients_come_and_go(tmp_path: Path) -> None:
    chromium()  # skip before starting anything when there is no browser
    async with one_member(ACCESS) as node:
        assert node.listen is not None
        await node.work_queue("jobs").push("first")
        app = web.Application()
        setup(app, node, status_prefix="")
        async with TestServer(app) as server:
            url = str(server.make_url("/?interval=250"))
            async with browser(url, tmp_path / "profile") as page:
                shown = await page.wait_for(f"{ROWS}.length === 8 && {ROWS}")
                assert shown == [
                    ["client sessions", "0", str(MAX_CLIENT_SESSIONS), "0%", "0 client(s)"],
                    ["most of one client", "0", str(MAX_CLIENT_SESSIONS), "0%",
                     "gives one up first at the bound"],
                    ["ended sessions", "0", str(ENDED_KEPT), "0%", "each kept 1.0 h at most"],
                    ["kept results", shown[3][1], "128.0 MiB", shown[3][3],
                     "8.0 MiB per client session, 64.0 MiB per member session"],
                    ["receipts", "0", str(RECEIPTS_TOTAL), "0%",
                     f"{RECEIPTS_KEPT} per work queue"],
                    ["ephemeral owners", "0", str(MAX_CLIENT_SESSIONS), "0%",
                     "0 subscription(s)"],
                    ["popped, not given back", "0", str(ELEMENTS), "0%",
                     f"{SESSION_ELEMENTS} per session"],
                    ["popped", "0 B", "64.0 MiB", "0%", "in every snapshot"]]
                work = "[...document.querySelectorAll('#work-queues tbody tr')[0].cells]"
                assert await page.evaluate(f"{work}.slice(0, 5).map(c => c.textContent)") == [
                    "jobs", "1", "0", "0", "0"]

                async with connect([node.listen], ("web", TOKEN)) as one, \
                        connect([node.listen], ("web", TOKEN)) as two:
                    await one.queue("q").push(1)
                    assert await one.queue("q").pop() == 1  # popped, not given back
                    await two.topic("news").subscribe("dashboard", "ephemeral")
                    jobs = two.work_queue("jobs")
                    delivery = await jobs.claim("w1")
                    await jobs.ack("w1", delivery.delivery_id)
                    for row, size in ((0, "2"), (1, "2"), (4, "1"), (5, "1"), (6, "1")):
                        assert await page.wait_for(
                            f"{_cells(ROWS, row, 1)} === {json.dumps(size)}"), row
                    rows = await page.evaluate(ROWS)
                    assert rows[0][4] == "1 client(s)" and rows[5][4] == "1 subscription(s)"
                    assert rows[0][3] == "<1%"  # 2 of the bound
                    assert await page.evaluate(f"{work}[4].textContent") == "1"
                    await screenshot(page, artifacts_dir("status-page") / "bounded-tables.png")
                assert await page.wait_for(  # both closed: their sessions ended
                    f"{_cells(ROWS, 2, 1)} === '2' && {_cells(ROWS, 0, 1)} === '0' && "
                    f"{_cells(ROWS, 1, 1)} === '0' && {_cells(ROWS, 5, 1)} === '0'")


async def test_page_shows_a_hostile_status_as_text_and_marks_a_table_near_its_bound(
        tmp_path: Path) -> None:
    """Whatever the status holds is text on the page, never markup; a table at 90% or
    more of its bound is marked."""
    chromium()
    async with one_member(ACCESS) as node:
        status: dict[str, Any] = node_status(node)
        hostile = "<img src=x onerror=\"document.body.dataset.pwned=1\">"
        tables = status["tables"]
        tables["client_sessions"].update(count=15_000, clients=hostile)
        tables["receipts"]["per_work_queue"] = "<b>bold</b>"
        tables["ephemeral_owners"]["sessions"] = hostile

        async def page_view(_request: web.Request) -> web.Response:
            return web.Response(body=status_page(), headers=PAGE_HEADERS)

        async def status_view(_request: web.Request) -> web.Response:
            return web.json_response(status)

        async def history_view(_request: web.Request) -> web.Response:
            return web.json_response({"now": 0, "window": 300, "objects": {},
                                      "cluster": {"points": []}})

        app = web.Application()
        app.router.add_get("/", page_view)
        app.router.add_get("/status.json", status_view)
        app.router.add_get("/history.json", history_view)
        async with TestServer(app) as server, \
                browser(str(server.make_url("/")), tmp_path / "profile") as page:
            rows = await page.wait_for(f"{ROWS}.length === 8 && {ROWS}")
            assert rows[0] == ["client sessions", "15000", str(MAX_CLIENT_SESSIONS), "92%",
                               f"{hostile} client(s)"]
            assert rows[4][4] == "<b>bold</b> per work queue"
            assert rows[5][1] == hostile and rows[5][3] == "\u2013"  # a dash: no share
            assert await page.evaluate(
                "document.querySelectorAll('#bounded-tables img, #bounded-tables b')"
                ".length") == 0
            assert await page.evaluate("document.body.dataset.pwned === undefined")
            marked = await page.evaluate(
                "[...document.querySelectorAll('#bounded-tables td.near')]"
                ".map(c => c.textContent)")
            assert marked == ["92%"]
