"""NodeProcess: one ``lazily-queue node --config FILE`` child process of the demo."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp


def node_command() -> list[str]:
    """How to run the ``lazily-queue`` CLI of this installation."""
    script = Path(sys.executable).with_name("lazily-queue")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "lazily_queue"]


class NodeProcess:
    """Starts, stops and SIGKILLs one node; reads its ready line and its status."""

    def __init__(self, node_id: int, config: Path, *, cwd: Path, env: dict[str, str],
                 log_path: Path) -> None:
        self.node_id = node_id
        self.config = config
        self.cwd = cwd
        self.env = env
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self.url: str | None = None
        self.ready = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.status: dict[str, Any] | None = None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        self.ready = asyncio.Event()
        self.url = None
        self.status = None
        with self.log_path.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *node_command(), "node", "--config", str(self.config), "--log-level", "warning",
                cwd=self.cwd, env=self.env, stdout=asyncio.subprocess.PIPE, stderr=log,
                start_new_session=True,
            )
        self._reader = asyncio.create_task(self._read(self.proc))

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith("ready "):
                fields = dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)
                self.url = fields.get("http")
                self.ready.set()

    async def wait_ready(self, timeout: float) -> None:
        """Wait for the ready line; fail with the end of the node's log if it exits."""
        assert self.proc is not None
        exited = asyncio.create_task(self.proc.wait())
        ready = asyncio.create_task(self.ready.wait())
        try:
            done, _ = await asyncio.wait({exited, ready}, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            ready.cancel()
        if ready in done and self.ready.is_set():
            return
        raise RuntimeError(f"node {self.node_id} did not start: {self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs in the node."""
        if self.proc is not None and self.alive:
            os.kill(self.proc.pid, signal.SIGKILL)

    async def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait; SIGKILL after ``timeout``. Returns the exit status."""
        if self.proc is None:
            return None
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                self.kill()
        code = await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._reader, 1.0)
        return code

    async def poll(self, session: aiohttp.ClientSession, timeout: float = 1.0) -> None:
        """Refresh :attr:`status` from ``/status.json`` (None while unreachable)."""
        if not self.alive or self.url is None:
            self.status = None
            return
        try:
            async with session.get(self.url + "/status.json",
                                   timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                self.status = json.loads(await response.read())
        except (aiohttp.ClientError, TimeoutError, ValueError):
            self.status = None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:]) or "(empty log)"


def free_ports(count: int) -> list[int]:
    """``count`` TCP ports free on the loopback interface now."""
    import socket

    held = [socket.socket() for _ in range(count)]
    try:
        for sock in held:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


class Signaling:
    """A ``lazily-queue signaling`` child process with a token (for WebRTC links)."""

    def __init__(self, log_path: Path, env: dict[str, str]) -> None:
        self.log_path = log_path
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, timeout: float = 15.0) -> str:
        """Start it on a free port; returns its ``ws://`` URL."""
        from .cluster import SIGNALING_ENV

        with self.log_path.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *node_command(), "signaling", "--listen", "127.0.0.1:0", "--token-env",
                SIGNALING_ENV, env=self.env, stdout=asyncio.subprocess.PIPE, stderr=log,
                start_new_session=True)
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except TimeoutError:
            line = b""
        text = line.decode(errors="replace").strip()
        if not text.startswith("signaling on "):
            raise RuntimeError(f"the signaling server did not start: {text or 'no output'}; "
                               f"see {self.log_path}")
        return text.split()[2]

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
