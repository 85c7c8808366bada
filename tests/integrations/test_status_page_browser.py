"""The status page in headless Chromium: live state, charts under load, the health
banner when a member is killed, and a redrive of dead letters made through the page.

The first test serves the page from three in-process node services; the second from
three ``lazily-queue node`` processes, one of which runs a steady load, and kills
another with SIGKILL. Screenshots are kept as artifacts (their paths are printed).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import signal
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.config import parse_config
from lazily_queue.service import NodeService
from tests.cli.node_procs import NodeProc, unix_peers, wait_for, write_config

from .browser import DevTools, artifacts_dir, browser, chromium, screenshot

ADMIN_TOKEN = "page-admin-token-0123456789"


@contextlib.asynccontextmanager
async def cluster(root: Path, monkeypatch: pytest.MonkeyPatch, **extra: str) -> AsyncIterator[
        list[NodeService]]:
    monkeypatch.setenv("LAZILY_PAGE_SECRET", "page-secret")
    peers = {str(i): f"unix:{root}/n{i}.sock" for i in (1, 2, 3)}
    services = [
        NodeService(parse_config({"id": i, "data_dir": f"d{i}", "http": "127.0.0.1:0",
                                  "durability": "none", "secret_env": "LAZILY_PAGE_SECRET",
                                  "peers": peers, **extra}, base=root),
                    out=io.StringIO(), handle_signals=False)
        for i in (1, 2, 3)
    ]
    tasks = [asyncio.create_task(s.run()) for s in services]
    try:
        async with asyncio.timeout(20):
            while True:
                if all(s.node is not None and s.node.running and s.node.leader_id
                       and s.http_url for s in services):
                    break
                await asyncio.sleep(0.05)
        yield services
    finally:
        for s in services:
            s.request_stop()
        codes = await asyncio.gather(*tasks)
    assert codes == [0, 0, 0]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


ROWS = ("[...document.querySelectorAll('#{} tbody tr')]"
        ".map(r => [...r.cells].slice(0, {}).map(c => c.textContent))")


async def test_status_page_shows_live_cluster_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium()  # skip before starting anything when there is no browser
    async with cluster(tmp_path, monkeypatch) as services:
        nodes = [s.node for s in services]
        assert all(n is not None for n in nodes)
        leader = nodes[0].leader_id if nodes[0] else None
        follower = next(s for s in services if s.node and not s.node.is_leader)
        assert follower.node is not None and follower.http_url is not None
        jobs = follower.node.work_queue("jobs")
        for i in range(7):
            await jobs.push(i)
        await follower.node.queue("orders").push("first")

        for bad in ("1e400", "-5", "NaN", "abc", "0"):  # refused with a clear 400
            code, body = await asyncio.to_thread(_get, f"{follower.http_url}/?interval={bad}")
            assert code == 400 and b"interval must be a finite number" in body, (bad, body)
        code, _ = await asyncio.to_thread(_get, f"{follower.http_url}/?interval=5")
        assert code == 200  # in range after clamping
        code, body = await asyncio.to_thread(_get, f"{follower.http_url}/history.json?since=x")
        assert code == 400 and json.loads(body)["error"]["code"] == "bad_request"

        async with browser(follower.http_url + "/?interval=200", tmp_path / "profile") as page:
            row = ROWS.format("work-queues", 6)
            await page.wait_for(f"document.getElementById('leader').textContent === '{leader}'")
            assert await page.wait_for(f"JSON.stringify({row}) === "
                                       "JSON.stringify([['jobs','7','0','0','0','']])")
            node_text = await page.evaluate("document.getElementById('node').textContent")
            assert node_text == follower.node.node_id
            members = await page.evaluate(
                "[...document.querySelectorAll('#members tbody tr')]"
                ".map(r => r.cells[0].textContent + '|' + r.cells[1].textContent)")
            assert sorted(members) == sorted(
                f"{i}{' (this node)' if str(i) == follower.node.node_id else ''}|"
                f"{'leader' if str(i) == leader else 'follower'}" for i in (1, 2, 3))
            links = await page.wait_for(
                "[...document.querySelectorAll('#members tbody a')].length === 2 && "
                "[...document.querySelectorAll('#members tbody a')].map(a => a.href)")
            assert sorted(u.rstrip("/") for u in links) == sorted(
                s.http_url for s in services if s is not follower)
            refreshes = int(await page.evaluate(
                "document.getElementById('refreshes').textContent"))

            for i in range(3):  # the page follows without a reload
                await jobs.push(i)
            delivery = await jobs.claim("page-test-worker")
            assert await page.wait_for(f"JSON.stringify({row}) === JSON.stringify("
                                       "[['jobs','9','1','0','0','page-test-worker: 1']])")
            assert delivery.value == 0
            later = int(await page.evaluate("document.getElementById('refreshes').textContent"))
            assert later > refreshes
            queues = await page.evaluate(
                "[...document.querySelectorAll('#queues tbody td')].map(c => c.textContent)")
            assert queues[:2] == ["orders", "1"]
            assert await page.evaluate("document.getElementById('error').textContent") == ""
            state = await page.wait_for("document.getElementById('admin-state').textContent")
            assert "admin API is off on this node" in state  # no admin token configured
            await screenshot(page, artifacts_dir("status-page") / "in-process.png")


# -- processes under load -----------------------------------------------------------------

def _chart_points(key: str, metric: str) -> str:
    return (f"(() => {{ const s = document.querySelector('svg.chart[data-key=\"{key}\"]"
            f"[data-metric=\"{metric}\"]'); return s ? s.querySelector('polyline')"
            ".getAttribute('points') : null; })()")


async def _js(page: DevTools, expression: str) -> Any:
    return await page.evaluate(expression)


async def test_page_monitors_load_turns_red_on_a_kill_and_redrives(tmp_path: Path) -> None:
    chromium()
    peers = unix_peers(tmp_path)
    token_line = 'admin_token_env = "LAZILY_TEST_ADMIN"'
    configs = [
        write_config(tmp_path / "n1.toml", 1, peers, extra=token_line,
                     app='entry = "node_app:load"\nrate = 25\nfail = 6'),
        write_config(tmp_path / "n2.toml", 2, peers, extra=token_line),
        write_config(tmp_path / "n3.toml", 3, peers, extra=token_line),
    ]
    env = {"LAZILY_TEST_ADMIN": ADMIN_TOKEN}
    procs = [NodeProc(c, env=env) for c in configs]
    shots = artifacts_dir("status-page")
    try:
        urls = [p.wait_ready() for p in procs]
        for p in procs:
            p.wait_line("leader ")
        wait_for(lambda: procs[1].status()["work_queues"].get("jobs", {}).get(
            "dead_letters") == 6, timeout=30, what="six dead letters")
        async with browser(urls[1] + "/?interval=300", tmp_path / "profile") as page:
            # Charts are present and move under load.
            key = "work_queue:jobs"
            for kind_key in ("queue:orders", key, "topic:news"):
                await page.wait_for(f"!!document.querySelector('.card[data-key=\"{kind_key}\"]')")
            first = await page.wait_for(
                f"(() => {{ const p = {_chart_points(key, 'rate')}; "
                "return p && p.split(' ').length >= 3 ? p : null; })()", timeout=30)
            moved = await page.wait_for(
                f"(() => {{ const p = {_chart_points(key, 'rate')}; "
                f"return p && p !== {json.dumps(first)} ? p : null; }})()", timeout=30)
            assert moved != first
            rate = await _js(page, "Number(document.querySelector('.card[data-key=\"" + key +
                             "\"] [data-metric=\"rate\"] .value').textContent.split(' / ')[0])")
            assert rate > 0, "the in-rate under load"
            # Healthy: green, or amber if a busy machine made the cluster elect again.
            assert await page.wait_for(
                "['ok', 'warning'].includes(document.getElementById('health').className)",
                timeout=30)
            assert "3/3 members up" in await _js(
                page, "document.getElementById('health-summary').textContent")
            await screenshot(page, shots / "under-load.png")

            # SIGKILL a member (not the page's node, not the loaded one): the banner is red.
            procs[2].proc.send_signal(signal.SIGKILL)
            procs[2].proc.wait(10)
            await page.wait_for("document.getElementById('health').className === 'critical'",
                                timeout=30)
            summary = await _js(page, "document.getElementById('health-summary').textContent")
            assert "2/3 members up" in summary and "quorum yes" in summary
            reasons = await _js(page, "document.getElementById('health-reasons').textContent")
            assert "member(s) 3 unreachable" in reasons
            row3 = await page.wait_for(
                "[...document.querySelectorAll('#members tbody tr')].map(r => [...r.cells]"
                ".map(c => c.textContent)).find(c => c[0].startsWith('3'))")
            assert row3[1] == "unreachable" and row3[2] == "DOWN"
            await screenshot(page, shots / "member-killed.png")

            # Redrive the dead letters through the page (log in, browse, redrive).
            await _js(page, f"document.getElementById('admin-token').value = "
                            f"{json.dumps(ADMIN_TOKEN)}; document.getElementById('login').click()")
            await page.wait_for("document.body.classList.contains('admin')")
            await _js(page, "document.getElementById('dlq-select').value = 'jobs'; "
                            "document.getElementById('dlq-browse').click()")
            listed = await page.wait_for(
                "document.querySelectorAll('#dlq tbody input[type=checkbox]').length")
            assert listed == 6
            await _js(page, "document.getElementById('dlq-redrive-all').click()")
            assert "confirm" in await _js(
                page, "document.getElementById('dlq-redrive-all').textContent")
            await _js(page, "document.getElementById('dlq-redrive-all').click()")
            result = await page.wait_for(
                "document.getElementById('admin-result').textContent.startsWith('redrove') && "
                "document.getElementById('admin-result').textContent")
            assert result == "redrove 6 dead letter(s) of jobs"
            # ... visible in the data: the items were delivered again and acknowledged.
            for value in range(6):
                procs[0].wait_line(f"acked-after-redrive {value}", timeout=30)
            wait_for(lambda: procs[1].status()["work_queues"]["jobs"]["dead_letters"] == 0,
                     what="no dead letters left")
            await page.wait_for(f"JSON.stringify({ROWS.format('work-queues', 4)}[0][3]) === "
                                "'\"0\"'")
            await screenshot(page, shots / "after-redrive.png")
    finally:
        for p in procs:
            p.terminate()
    assert procs[0].proc.returncode == 0, procs[0].stderr()
