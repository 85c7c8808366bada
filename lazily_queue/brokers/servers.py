"""Throwaway broker servers for tests and benchmarks: ``nats-server -js`` and
``redis-server`` on a free loopback port in a temporary directory, stopped on exit.

    async with RedisServer() as redis:       # appendonly yes, appendfsync always
        url = redis.url                       # redis://127.0.0.1:PORT/0
    async with NatsServer() as nats:          # JetStream, file storage
        url = nats.url

``restart()`` stops the process (SIGTERM, or SIGKILL with ``kill=True``) and starts it
again on the same port and data directory; ``pause()`` (SIGSTOP) returns once it
answers nothing, ``resume()`` lets it go on. ``password=`` makes the server require it.
Every wait is bounded: a process still running :attr:`BrokerServer.term_timeout`
seconds after SIGTERM is killed, and one still running
:attr:`BrokerServer.kill_timeout` seconds after SIGKILL (stuck in the kernel, say on
a hung disk) raises :class:`ServerWouldNotStop` naming its pid.
"""

from __future__ import annotations

import asyncio
import contextlib
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


#: Ports a first start tries when the one it picked was taken before the server bound it.
PORT_TRIES = 5


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def threads_stopped(pid: int) -> bool:
    """Whether every thread of process ``pid`` is stopped (``T`` in ``/proc``); true
    where ``/proc`` does not list them."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        names = os.listdir(tasks)
    except OSError:
        return True
    for name in names:
        try:
            stat = (tasks / name / "stat").read_text()
        except OSError:
            continue  # a thread that ended meanwhile
        if stat.rpartition(")")[2].split()[0] != "T":
            return False
    return True


class ServerWouldNotStop(RuntimeError):
    """A broker server process still ran after SIGKILL and the wait for it."""

    def __init__(self, binary: str, pid: int, waited: float) -> None:
        super().__init__(
            f"{binary} (pid {pid}) still runs {waited:g}s after SIGKILL: it is stuck in the "
            f"kernel (a hung disk or mount?); see `cat /proc/{pid}/stack` and kill it once "
            "that clears")
        self.pid = pid


class BrokerServer:
    """One server process on ``127.0.0.1:port`` with its files under ``directory``."""

    binary = ""
    #: Seconds :meth:`stop` waits after SIGTERM before it sends SIGKILL.
    term_timeout = 30.0
    #: Seconds :meth:`stop` waits after SIGKILL before it raises ServerWouldNotStop.
    kill_timeout = 10.0
    #: What the server logs once it serves (None: a connection to the port is enough).
    ready_line: bytes | None = None
    #: What the server logs when it exits because its port is taken.
    port_taken: bytes | None = None

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
        self._started = False

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
        """Start the process and return once it serves its port. A server that says it
        is ready (:attr:`ready_line` in its own log) is the one listening there: another
        process that took the port meanwhile is never mistaken for it. On a first start
        a port taken meanwhile is replaced by another free one; on a restart (same
        port, same data) it raises."""
        fresh = self.process is None and not self._started
        for _ in range(PORT_TRIES):
            if await self._spawned():
                self._started = True
                return
            if not fresh:
                break
            self.port = free_port()
        raise RuntimeError(f"{self.binary} could not listen on 127.0.0.1:{self.port}: "
                           "another process holds the port")

    async def _spawned(self) -> bool:
        """Spawn the process and wait until it serves; False when it exited because its
        port was taken."""
        log = self.directory / "server.log"
        offset = log.stat().st_size if log.exists() else 0
        self.process = self._spawn()
        deadline = time.monotonic() + 30
        while True:
            said = _read_from(log, offset)
            if self.process.poll() is not None:
                if self.port_taken is not None and self.port_taken in said:
                    self.process = None
                    return False
                text = said[-2000:].decode(errors="replace")
                raise RuntimeError(f"{self.binary} exited at start:\n{text}")
            if self.ready_line is None or self.ready_line in said:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                        return True
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.binary} did not listen on {self.port}")
            await asyncio.sleep(0.02)

    async def stop(self, *, kill: bool = False) -> None:
        """Stop the process (SIGTERM, then SIGKILL after :attr:`term_timeout`; SIGKILL
        at once with ``kill=True``). Raises :class:`ServerWouldNotStop` when it still
        runs :attr:`kill_timeout` seconds after SIGKILL; it stays :attr:`process`, so a
        later ``stop()`` waits for it again."""
        process = self.process
        if process is None or process.poll() is not None:
            self.process = None
            return
        if not kill:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, self.term_timeout)
        if process.poll() is None:
            process.kill()
            try:
                await asyncio.to_thread(process.wait, self.kill_timeout)
            except subprocess.TimeoutExpired:
                raise ServerWouldNotStop(self.binary, process.pid, self.kill_timeout) from None
        self.process = None

    async def pause(self) -> None:
        """Pause the process (SIGSTOP) and return once every thread of it is stopped: the
        kernel stops them after ``kill`` returns (1.5 ms, up to 11 ms on a loaded host),
        and until then the server goes on answering. Where ``/proc`` does not show the
        threads, return at once."""
        process = self.process
        if process is None:
            raise RuntimeError(f"{self.binary} is not running")
        os.kill(process.pid, signal.SIGSTOP)
        deadline = time.monotonic() + self.kill_timeout
        while not threads_stopped(process.pid):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.binary} (pid {process.pid}) was not stopped "
                                   f"{self.kill_timeout:g}s after SIGSTOP")
            await asyncio.sleep(0.001)

    def resume(self) -> None:
        """Let a paused process run again (SIGCONT)."""
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGCONT)

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
    ready_line = b"Ready to accept connections"
    port_taken = b"Address already in use"

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
    ready_line = b"Server is ready"
    port_taken = b"address already in use"

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
