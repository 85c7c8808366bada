"""BrokerServer.stop: every wait is bounded; a process that ignores SIGTERM is killed,
and one that outlives SIGKILL raises ServerWouldNotStop naming its pid."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from lazily_queue.brokers.servers import BrokerServer, ServerWouldNotStop

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
