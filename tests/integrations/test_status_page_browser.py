"""The status page in headless Chromium, served by three in-process node services.

The browser is driven over the DevTools protocol: the test waits until the page shows
the leader and the queue depths, changes a depth and waits for the page to show the
new value without a reload, then takes a screenshot and checks that it is a real,
non-blank PNG of the window's size.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import itertools
import json
import shutil
import struct
import urllib.request
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from lazily_queue.config import parse_config
from lazily_queue.service import NodeService

WIDTH, HEIGHT = 1200, 900
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.skip(f"no Chromium binary on PATH (looked for {', '.join(BROWSERS)}); "
                "install it with `apt-get install chromium` (.ci/run does)")


@contextlib.asynccontextmanager
async def cluster(root: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[
        list[NodeService]]:
    monkeypatch.setenv("LAZILY_PAGE_SECRET", "page-secret")
    peers = {str(i): f"unix:{root}/n{i}.sock" for i in (1, 2, 3)}
    services = [
        NodeService(parse_config({"id": i, "data_dir": f"d{i}", "http": "127.0.0.1:0",
                                  "durability": "none", "secret_env": "LAZILY_PAGE_SECRET",
                                  "peers": peers}, base=root),
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


class DevTools:
    """A minimal DevTools-protocol client for one page."""

    def __init__(self, connection: Any) -> None:
        self.ws = connection
        self.ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        await self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 15.0) -> Any:
        async with asyncio.timeout(timeout):
            while True:
                value = await self.evaluate(expression)
                if value:
                    return value
                await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def browser(url: str, profile: Path) -> AsyncIterator[DevTools]:
    proc = await asyncio.create_subprocess_exec(
        chromium(), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
        "--hide-scrollbars", "--remote-debugging-port=0", url,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        async with asyncio.timeout(30):
            while not port_file.exists() or not port_file.read_text().strip():
                assert proc.returncode is None, "chromium exited during startup"
                await asyncio.sleep(0.05)
            port = int(port_file.read_text().split()[0])
            while True:
                targets = await asyncio.to_thread(_json, f"http://127.0.0.1:{port}/json/list")
                pages = [t for t in targets if t["type"] == "page"]
                if pages:
                    break
                await asyncio.sleep(0.05)
        async with websockets.connect(pages[0]["webSocketDebuggerUrl"], max_size=None) as ws:
            yield DevTools(ws)
    finally:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated scanlines of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


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

        async with browser(follower.http_url + "/?interval=200", tmp_path / "profile") as page:
            row = ("[...document.querySelectorAll('#work-queues tbody tr')]"
                   ".map(r => [...r.cells].map(c => c.textContent))")
            await page.wait_for(f"document.getElementById('leader').textContent === '{leader}'")
            assert await page.wait_for(f"JSON.stringify({row}) === "
                                       "JSON.stringify([['jobs','7','0','0','']])")
            node_text = await page.evaluate("document.getElementById('node').textContent")
            assert node_text == follower.node.node_id
            members = await page.evaluate(
                "[...document.querySelectorAll('#members tbody tr')]"
                ".map(r => r.cells[0].textContent + '|' + r.cells[1].textContent)")
            assert sorted(members) == sorted(
                f"{i}{' (this node)' if str(i) == follower.node.node_id else ''}|"
                f"{'leader' if str(i) == leader else 'follower'}" for i in (1, 2, 3))
            refreshes = int(await page.evaluate(
                "document.getElementById('refreshes').textContent"))

            for i in range(3):  # the page follows without a reload
                await jobs.push(i)
            delivery = await jobs.claim("page-test-worker")
            assert await page.wait_for(f"JSON.stringify({row}) === JSON.stringify("
                                       "[['jobs','9','1','0','page-test-worker: 1']])")
            assert delivery.value == 0
            later = int(await page.evaluate("document.getElementById('refreshes').textContent"))
            assert later > refreshes
            queues = await page.evaluate(
                "[...document.querySelectorAll('#queues tbody td')].map(c => c.textContent)")
            assert queues[:2] == ["orders", "1"]
            assert await page.evaluate("document.getElementById('error').textContent") == ""

            await page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                            deviceScaleFactor=1, mobile=False)
            shot = await page.call("Page.captureScreenshot", format="png")
    png = base64.b64decode(shot["data"])
    (tmp_path / "status.png").write_bytes(png)
    width, height, pixels = png_pixels(png)
    assert (width, height) == (WIDTH, HEIGHT)
    assert len(png) > 10_000, "a near-empty screenshot"
    assert len(set(pixels[i] for i in range(0, len(pixels), 7))) > 20, "a blank screenshot"
