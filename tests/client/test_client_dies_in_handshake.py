"""A client process killed inside the transport handshake, its link reset: the member
logs one line, naming the client's address and the client, and saying it went away (not
a second, anonymous line from the channel)."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lazily_queue import ClientAccess, ClientGrant, Node

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

TOKEN = "token-of-the-dying-client"
#: A client that, once authenticated, resets its link (no lingering) and is SIGKILLed
#: before it sends the handshake's last message; it prints its link's local port first.
DYING = f"""
import asyncio, os, signal, socket, struct, sys
from lazily_transports._core import _buffered
from lazily_queue import connect

def die(channel, *limits):
    sock = channel._transport.get_extra_info("socket")
    print(sock.getsockname()[1], flush=True)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    os.kill(os.getpid(), signal.SIGKILL)

_buffered.BufferedChannel.open_limits = die

async def main():
    async with connect([sys.argv[1]], ("producer", {TOKEN!r}), connect_timeout=30):
        pass

asyncio.run(main())
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_client_killed_in_the_handshake_is_one_line_naming_it(
    short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    member = Node(1, data_dir=short_tmp / "data", listen=f"unix:{short_tmp}/n1.sock",
                  secret="s" * 16, durability="none",
                  clients=ClientAccess([ClientGrant("producer", TOKEN, produce=["*"])],
                                       listen=address))
    script = short_tmp / "dying.py"
    script.write_text(DYING)
    async with member:
        await member.wait_for_leader()
        with caplog.at_level(logging.DEBUG, logger="lazily_transports"):
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, str(script), address], capture_output=True,
                text=True, timeout=60)
            port = done.stdout.strip()
            assert done.returncode == -9 and port.isdigit(), done
            peer = f"tcp://127.0.0.1:{port}"
            for _ in range(100):
                if any(peer in r.getMessage() for r in caplog.records
                       if r.name == "lazily_transports.handshake"):
                    break
                await asyncio.sleep(0.05)
    lines = [r.getMessage() for r in caplog.records
             if r.levelno >= logging.WARNING and peer in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"handshake with {peer} refused: "), lines
    assert "link closed during handshake" in lines[0], lines
    assert "client 'producer'" in lines[0] and "went away" in lines[0], lines
