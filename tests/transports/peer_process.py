"""A peer that runs in a child process for the cross-process transport tests.

Usage::

    python peer_process.py echo-listen ADDRESS PEER_ID
    python peer_process.py echo-dial ADDRESS PEER_ID
    python peer_process.py mesh PEER_ID LISTEN_ADDRESS OTHER_ID=ADDRESS...

The secret comes from ``LAZILY_TEST_SECRET`` (hex). Status lines go to stdout
(``LISTENING addr``, ``UP peer``, ``REFUSED field``); the process exits when its
stdin closes, so it never outlives the test.
"""

from __future__ import annotations

import asyncio
import os
import sys

import anyio
from lazily_transports import (
    Frame,
    HandshakeError,
    LinkAttribute,
    LinkConfig,
    LinkStream,
    Mesh,
    PeerUp,
    dial,
    listen,
)


def _config(peer_id: int) -> LinkConfig:
    return LinkConfig(
        peer_id=peer_id,
        session_id="test-cluster",
        secret=bytes.fromhex(os.environ["LAZILY_TEST_SECRET"]),
        handshake_timeout=5.0,
    )


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _stdin_closed() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


async def _echo(channel: LinkStream) -> None:
    try:
        while True:
            await channel.send(await channel.receive())
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


async def echo_listen(address: str, peer_id: int) -> None:
    async with listen(address, _config(peer_id), _echo) as listener:
        _say(f"LISTENING {listener.address}")
        await _stdin_closed()


async def echo_dial(address: str, peer_id: int) -> None:
    try:
        channel = await dial(address, _config(peer_id), timeout=5)
    except HandshakeError as exc:
        _say(f"REFUSED {exc.field}")
        return
    _say(f"UP {channel.extra(LinkAttribute.peer_id)}")
    await _echo(channel)


async def mesh(peer_id: int, listen_address: str, peers: dict[int, str]) -> None:
    async with Mesh(_config(peer_id), listen_address, peers, backoff_initial=0.02) as node:
        _say(f"LISTENING {node.listen_address}")

        async def echo_events() -> None:
            async for event in node.events:
                if isinstance(event, PeerUp):
                    _say(f"UP {event.peer_id}")
                elif isinstance(event, Frame):
                    await node.send(event.peer_id, event.data)

        task = asyncio.create_task(echo_events())
        await _stdin_closed()
        task.cancel()


def main(argv: list[str]) -> None:
    if os.environ.get("LAZILY_TEST_LOOP") == "uvloop":
        import uvloop

        uvloop.install()
    mode = argv[0]
    if mode == "echo-listen":
        asyncio.run(echo_listen(argv[1], int(argv[2])))
    elif mode == "echo-dial":
        asyncio.run(echo_dial(argv[1], int(argv[2])))
    elif mode == "mesh":
        peers = {int(k): v for k, v in (item.split("=", 1) for item in argv[3:])}
        asyncio.run(mesh(int(argv[1]), argv[2], peers))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
