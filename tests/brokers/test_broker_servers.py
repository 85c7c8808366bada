"""BrokerServer: every wait of stop is bounded (a process that ignores SIGTERM is
killed, one that outlives SIGKILL raises ServerWouldNotStop naming its pid), start
never takes another process on its port for the server, and a paused server answers
nothing once ``pause()`` returned."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from lazily_queue.brokers.servers import (
    BrokerServer,
    NatsServer,
    RedisServer,
    ServerWouldNotStop,
    find_binary,
)

#: Listens on the port it is given and ignores SIGTERM.
STUBBORN = """
import signal, socket, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
while True:
    time.sleep(60)
"""


class StubbornServer(BrokerServer):
    """A "server" that ignores SIGTERM."""

    binary = "sh"  # found on every machine; the command runs this Python
    term_timeout = 0.5
    kill_timeout = 5.0

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-c", STUBBORN, str(self.port)]


async def test_a_server_ignoring_sigterm_is_killed() -> None:
    server = StubbornServer()
    async with server:
        process = server.process
        assert process is not None
    assert process.returncode == -signal.SIGKILL
    assert server.process is None


class _Undying:
    """Stands in for a process that SIGKILL does not end (stuck in the kernel): every
    bounded wait times out, and an unbounded one fails the test instead of hanging."""

    def __init__(self, real: subprocess.Popen[bytes]) -> None:
        self.real = real
        self.pid = real.pid
        self.signals: list[int] = []

    def poll(self) -> int | None:
        return None

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)

    def kill(self) -> None:
        self.signals.append(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            raise AssertionError("stop() waited for the process without a bound")
        raise subprocess.TimeoutExpired("server", timeout)


@pytest.mark.parametrize("kill", [False, True])
async def test_a_process_that_outlives_sigkill_raises_naming_its_pid(kill: bool) -> None:
    server = StubbornServer()
    await server.start()
    real = server.process
    assert real is not None
    undying = _Undying(real)
    server.process = undying  # type: ignore[assignment]
    try:
        with pytest.raises(ServerWouldNotStop, match=rf"pid {real.pid}\b.*SIGKILL") as caught:
            await server.stop(kill=kill)
        assert caught.value.pid == real.pid
        expected = [signal.SIGKILL] if kill else [signal.SIGTERM, signal.SIGKILL]
        assert undying.signals == expected
        assert server.process is undying  # type: ignore[comparison-overlap]  # still tracked
    finally:
        server.process = real
        await server.stop(kill=True)


def _held_port() -> socket.socket:
    """A loopback port another process might hold: bound and listening."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


@pytest.mark.parametrize("kind", [NatsServer, RedisServer], ids=["nats", "redis"])
async def test_a_port_taken_before_the_first_start_is_replaced(kind: type[BrokerServer]) -> None:
    """Another process listening on the port picked for the server (taken between the
    pick and the server's bind) was taken for the server: the start returned, and the
    caller spoke to that other process while the server had exited."""
    if find_binary(kind.binary) is None:
        pytest.skip(f"{kind.binary} is not installed")
    with _held_port() as holder:
        taken = holder.getsockname()[1]
        server = kind()
        server.port = taken
        async with server:
            assert server.process is not None and server.process.poll() is None
            assert server.port != taken
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"PING\r\n")
            assert await asyncio.wait_for(reader.readline(), 10)  # the server itself answers
            writer.close()


async def test_a_restart_whose_port_was_taken_meanwhile_says_so() -> None:
    if find_binary("redis-server") is None:
        pytest.skip("redis-server is not installed")
    async with RedisServer() as server:
        await server.stop()
        with socket.socket() as holder:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.bind(("127.0.0.1", server.port))
            holder.listen()
            with pytest.raises(RuntimeError, match="another process holds the port"):
                await server.start()
        assert server.process is None


@pytest.fixture
def loaded_host() -> Iterator[None]:
    """A CPU hog per CPU while the test runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.skipif(find_binary("nats-server") is None, reason="nats-server is not installed")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_paused_server_answers_nothing_once_pause_returned(loaded_host: None) -> None:
    """SIGSTOP stops the threads after ``kill`` returns: on a loaded host a request sent
    at once was answered 18 times in 40 (the paused-server test then saw its pull answered
    and waited on for an element); sent once ``pause()`` returned, never."""
    import nats

    async with NatsServer() as server:
        nc = await nats.connect(server.url)
        try:
            answered = 0
            for _ in range(20):
                await nc.request("$JS.API.INFO", b"", timeout=5)
                await server.pause()
                try:
                    await nc.request("$JS.API.INFO", b"", timeout=0.2)
                    answered += 1
                except nats.errors.TimeoutError:
                    pass
                finally:
                    server.resume()
            assert answered == 0
        finally:
            await nc.close()
