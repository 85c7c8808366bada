"""The peers' servers start on fresh ports when a port found free was taken before the
server bound it, and only then."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.peers_common import Server, free_port, listening  # noqa: E402

#: A server that listens on the port it is given, as nats-server and redis-server do.
LISTEN = ("import socket, sys, time\n"
          "s = socket.socket()\n"
          "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
          "s.listen()\n"
          "time.sleep(60)\n")


async def test_a_port_taken_meanwhile_is_given_up_for_a_fresh_one(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: nothing answers on it
        taken_port = taken.getsockname()[1]
        tried: list[int] = []

        def build(attempt: int) -> tuple[list[Server], list[int]]:
            port = taken_port if attempt == 0 else free_port()
            tried.append(port)
            return [Server([sys.executable, "-c", LISTEN, str(port)],
                           tmp_path / f"s{attempt}.log")], [port]

        async with listening(build) as (server,):
            assert server.proc is not None and server.proc.poll() is None
        assert len(tried) == 2 and tried[0] == taken_port != tried[1]
        assert "Address already in use" in (tmp_path / "s0.log").read_text()
        assert server.proc.poll() is not None  # stopped with the block


async def test_an_erlang_server_whose_port_was_taken_is_started_on_a_fresh_one(
        tmp_path: Path) -> None:
    """RabbitMQ says ``eaddrinuse`` in its boot error, not the C library's words."""
    failed = ("raise SystemExit('{error,{could_not_start_listener,\"127.0.0.1\",5672,"
              "{listen_error,{acceptor,{127,0,0,1},5672},eaddrinuse}}}')")
    tried: list[int] = []

    def build(attempt: int) -> tuple[list[Server], list[int]]:
        tried.append(attempt)
        port = free_port()
        argv = [sys.executable, "-c", failed] if attempt == 0 else [
            sys.executable, "-c", LISTEN, str(port)]
        return [Server(argv, tmp_path / f"s{attempt}.log")], [port]

    async with listening(build) as (server,):
        assert server.proc is not None and server.proc.poll() is None
    assert tried == [0, 1]


async def test_a_server_failing_otherwise_is_not_started_again(tmp_path: Path) -> None:
    tried: list[int] = []

    def build(attempt: int) -> tuple[list[Server], list[int]]:
        tried.append(attempt)
        return [Server([sys.executable, "-c", "raise SystemExit('no config')"],
                       tmp_path / "s.log")], [free_port()]

    with pytest.raises(RuntimeError, match="no config"):
        async with listening(build):
            pass
    assert tried == [0]
