"""Links between this process and a real child Python process."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from lazily_transports import (
    Frame,
    LinkAttribute,
    LinkStream,
    Mesh,
    PeerDown,
    PeerUp,
    dial,
    listen,
)
from transport_helpers import SECRET, address_for, make_config

pytestmark = pytest.mark.timeout(60)

PEER = Path(__file__).with_name("peer_process.py")


class Child:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def line(self, timeout: float = 10.0) -> str:
        assert self.process.stdout is not None
        with anyio.fail_after(timeout):
            raw = await self.process.stdout.readline()
        if not raw:
            raise AssertionError(f"child exited early with {await self.process.wait()}")
        return raw.decode().strip()


@asynccontextmanager
async def child(*args: str, secret: bytes = SECRET) -> AsyncIterator[Child]:
    env = {**os.environ, "LAZILY_TEST_SECRET": secret.hex()}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PEER),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        yield Child(process)
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            with anyio.fail_after(10):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


@pytest.fixture(params=["unix", "tcp", "ws"])
def socket_address(request: pytest.FixtureRequest, short_tmp: Path) -> str:
    return address_for(request.param, short_tmp)


async def test_child_dials_us_and_echoes_frames(socket_address: str) -> None:
    channels: asyncio.Queue[LinkStream] = asyncio.Queue()
    done = asyncio.Event()

    async def handler(channel: LinkStream) -> None:
        channels.put_nowait(channel)
        await done.wait()

    async with listen(socket_address, make_config(1), handler) as listener:
        async with child("echo-dial", listener.address, "2") as peer:
            assert await peer.line() == "UP 1"
            channel = await asyncio.wait_for(channels.get(), 10)
            assert channel.extra(LinkAttribute.peer_id) == 2
            frames = [os.urandom(i % 2000) for i in range(1000)]

            async def produce() -> None:
                for frame in frames:
                    await channel.send(frame)

            sending = asyncio.create_task(produce())
            echoed = [await channel.receive() for _ in frames]
            await sending
            assert echoed == frames
            done.set()


async def test_we_dial_a_child_listening_on_an_ephemeral_port(short_tmp: Path) -> None:
    async with child("echo-listen", "tcp://127.0.0.1:0", "2") as peer:
        status = await peer.line()
        assert status.startswith("LISTENING tcp://127.0.0.1:")
        address = status.split()[1]
        assert not address.endswith(":0")
        channel = await dial(address, make_config(1), timeout=5)
        await channel.send(b"across processes")
        assert await channel.receive() == b"across processes"
        assert channel.extra(LinkAttribute.peer_id) == 2
        await channel.aclose()


async def test_child_with_the_wrong_secret_is_refused(socket_address: str) -> None:
    reached: list[int] = []

    async def handler(channel: LinkStream) -> None:
        reached.append(channel.extra(LinkAttribute.peer_id))

    async with listen(socket_address, make_config(1), handler) as listener:
        async with child("echo-dial", listener.address, "2", secret=b"wrong" * 8) as peer:
            assert await peer.line() == "REFUSED auth"
        assert reached == []


async def test_mesh_with_a_child_survives_its_restart(short_tmp: Path) -> None:
    ours, theirs = f"unix://{short_tmp}/one.sock", f"unix://{short_tmp}/two.sock"
    fast = {"backoff_initial": 0.02, "backoff_max": 0.2}
    async with Mesh(make_config(1), ours, {2: theirs}, **fast) as mesh:  # type: ignore[arg-type]
        epochs = []
        for _round in range(2):
            async with child("mesh", "2", theirs, f"1={ours}") as peer:
                assert (await peer.line()).startswith("LISTENING")
                with anyio.fail_after(10):
                    up = await mesh.events.receive()
                    assert isinstance(up, PeerUp) and up.peer_id == 2
                    epochs.append(up.epoch)
                    assert await mesh.send(2, b"round %d" % _round)
                    echo = await mesh.events.receive()
                assert echo == Frame(2, up.epoch, b"round %d" % _round)
            with anyio.fail_after(10):
                down = await mesh.events.receive()
            assert isinstance(down, PeerDown) and down.epoch == epochs[-1]
            assert mesh.send_nowait(2, b"while down") is False
        assert epochs[1] > epochs[0]
        assert mesh.counters(2).reconnects == 1
        assert mesh.counters(2).frames_dropped == 2
