"""Throwaway broker servers for tests and benchmarks: ``nats-server -js`` and
``redis-server`` on a free loopback port in a temporary directory, stopped on exit.

    async with RedisServer() as redis:       # appendonly yes, appendfsync always
        url = redis.url                       # redis://127.0.0.1:PORT/0
    async with NatsServer() as nats:          # JetStream, file storage
        url = nats.url

``restart()`` stops the process (SIGTERM, or SIGKILL with ``kill=True``) and starts it
again on the same port and data directory. ``password=`` makes the server require it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])


def find_binary(name: str) -> str | None:
    """The path of ``name`` (also looked up in the sbin directories), or ``None``."""
    return shutil.which(name, path=SEARCH_PATH)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BrokerServer:
    """One server process on ``127.0.0.1:port`` with its files under ``directory``."""

    binary = ""

    def __init__(self, *, password: str | None = None, directory: Path | None = None) -> None:
        path = find_binary(self.binary)
        if path is None:
            raise FileNotFoundError(f"{self.binary} is not installed (apt install {self.binary})")
        self.path = path
        self.password = password
        self._own_dir = directory is None
        self.directory = Path(tempfile.mkdtemp(prefix=f"lq-{self.binary}-")) \
            if directory is None else directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def _spawn(self) -> subprocess.Popen[bytes]:
        with (self.directory / "server.log").open("ab") as log:
            return subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                    cwd=self.directory)

    async def start(self) -> None:
        self.process = self._spawn()
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                text = (self.directory / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.binary} exited at start:\n{text}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.binary} did not listen on {self.port}") from None
                await asyncio.sleep(0.02)

    async def stop(self, *, kill: bool = False) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, 30)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)

    async def restart(self, *, kill: bool = False) -> None:
        await self.stop(kill=kill)
        await self.start()

    async def __aenter__(self) -> BrokerServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)


class RedisServer(BrokerServer):
    """``redis-server`` with ``appendonly yes`` and ``appendfsync always``."""

    binary = "redis-server"

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        argv = [self.path, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(self.directory), "--appendonly", "yes",
                "--appendfsync", "always", "--save", "", "--daemonize", "no"]
        if self.password:
            argv += ["--requirepass", self.password]
        return argv


class NatsServer(BrokerServer):
    """``nats-server`` with JetStream on file storage in the temporary directory."""

    binary = "nats-server"

    @property
    def url(self) -> str:
        auth = f"lq:{self.password}@" if self.password else ""
        return f"nats://{auth}127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        lines = [f"listen: 127.0.0.1:{self.port}",
                 f'jetstream {{ store_dir: "{self.directory / "jetstream"}" }}']
        if self.password:
            lines.append(f'authorization {{ user: lq, password: "{self.password}" }}')
        config = self.directory / "nats.conf"
        config.write_text("\n".join(lines) + "\n")
        return [self.path, "-c", str(config)]
