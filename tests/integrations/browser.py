"""Headless Chromium for the status page tests, driven over the DevTools protocol.

:func:`browser` starts Chromium on a URL and yields a :class:`DevTools` client of its
page; :func:`screenshot` saves a PNG and checks it is a real, non-blank image;
:func:`artifacts_dir` is where tests keep their screenshots (``LAZILY_ARTIFACTS`` or
``tmp/artifacts`` in the checkout).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import struct
import urllib.request
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets

WIDTH, HEIGHT = 1200, 900
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.skip(f"no Chromium binary on PATH (looked for {', '.join(BROWSERS)}); "
                "install it with `apt-get install chromium` (.ci/run does)")


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
        # A hang detector: on a loaded two-core machine Chromium's first page can take
        # tens of seconds to appear.
        async with asyncio.timeout(120):
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


def artifacts_dir(name: str) -> Path:
    """A directory for this test's artifacts (printed, kept after the run)."""
    root = Path(os.environ.get("LAZILY_ARTIFACTS",
                               Path(__file__).resolve().parents[2] / "tmp" / "artifacts"))
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


async def screenshot(page: DevTools, path: Path) -> bytes:
    """Save the page as a PNG at ``path`` and check it is a real, non-blank picture."""
    await page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                    deviceScaleFactor=1, mobile=False)
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    png = base64.b64decode(shot["data"])
    await asyncio.to_thread(path.write_bytes, png)
    print(f"screenshot: {path}")
    width, height, pixels = png_pixels(png)
    assert width == WIDTH and height >= HEIGHT // 2
    assert len(png) > 10_000, "a near-empty screenshot"
    assert len(set(pixels[i] for i in range(0, len(pixels), 7))) > 20, "a blank screenshot"
    return png
