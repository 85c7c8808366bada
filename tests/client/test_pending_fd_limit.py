"""At a low open-file limit the caps on connections in their handshake are lowered to
fit it (one log line naming ``ulimit -n``): strangers connecting to every listener of a
member do not run it out of descriptors, and clients link once they are gone."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from lazily_transports import DEFAULT_MAX_PENDING_HANDSHAKES, DEFAULT_MAX_PENDING_PER_SOURCE

from lazily_queue import connect
from lazily_queue.pending_caps import pending_caps

TOKEN = b"token-of-the-web-tier"
LIMIT = 40
MEMBER = """
import asyncio, json
from lazily_queue import ClientAccess, ClientGrant, Node

TOKEN = b"token-of-the-web-tier"


async def main():
    node = Node(1, data_dir=None, durability="none", listen="tcp://127.0.0.1:0",
                secret=b"the-cluster-secret",
                clients=ClientAccess([ClientGrant("web", TOKEN, produce=["*"])],
                                     listen=["tcp://127.0.0.1:0", "ws://127.0.0.1:0/c"]))
    async with node:
        await node.wait_for_leader()
        print(json.dumps([node.driver.network.listen_address, *node.clients.addresses]),
              flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1].split("/")[0])


async def _stranger(port: int) -> socket.socket:
    """A TCP connection to ``port`` that sends nothing."""
    sock = socket.socket()
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return sock


async def test_strangers_on_every_listener_do_not_exhaust_a_low_open_file_limit(
    tmp_path: Path,
) -> None:
    log = (tmp_path / "member.log").open("w+")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    member = subprocess.Popen(  # noqa: ASYNC220 - the member runs beside the test
        [sys.executable, "-c", MEMBER], stdout=subprocess.PIPE,
        stderr=log, text=True, env=env, preexec_fn=_low_limit)
    try:
        assert member.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(member.stdout.readline), 60)
        addresses = json.loads(line)
        # All at once: one by one, each connect past the member's one-connection backlog
        # would wait out a SYN retransmission (1 s) before the next began.
        strangers = await asyncio.gather(*(_stranger(_port(address))
                                           for address in addresses for _ in range(12)))
        await asyncio.sleep(2)
        for sock in strangers:
            sock.close()
        async with connect([addresses[1]], ("web", TOKEN), connect_timeout=30) as client:
            await client.barrier()
        log.seek(0)
        text = log.read()
        assert "Too many open files" not in text, text[-3000:]
        assert f"ulimit -n {LIMIT}" in text
    finally:
        member.kill()
        member.wait()
        log.close()


def test_the_caps_fit_the_limit_and_the_lowering_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert pending_caps(3, 40, report=True) == (1, 1)
    assert "ulimit -n 40" in caplog.text
    assert pending_caps(1, 65536) == (DEFAULT_MAX_PENDING_HANDSHAKES,
                                      DEFAULT_MAX_PENDING_PER_SOURCE)
    assert pending_caps(4, 1024) == (32, DEFAULT_MAX_PENDING_PER_SOURCE)
