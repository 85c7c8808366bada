"""What a member logs when a client's link ends or misbehaves, with the client a real
process: a client killed is one INFO line naming it and no WARNING; a client sending a
frame the member cannot read, or one over its link's limit, is one WARNING naming it and
the cause."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import pytest

from lazily_queue.client import protocol as P
from tests.client.one_member import TOKEN, one_member

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
#: A client pushing to "jobs" from 64 tasks at once until it is killed.
PUSHING = """
import asyncio, sys
from lazily_queue import Credentials, connect

async def main():
    async with connect(sys.argv[1], Credentials("web", {token!r})) as client:
        jobs = client.queue("jobs")
        await jobs.push(b"first")
        print("ready", flush=True)

        async def pushing():
            while True:
                await jobs.push(b"x" * 1000)

        await asyncio.gather(*(pushing() for _ in range(64)))

asyncio.run(main())
""".replace("{token!r}", repr(TOKEN))
#: A raw client link: greeted, then it sends argv[2] (``cbor``: bytes no decoder reads;
#: ``huge``: a frame over the member's request limit, argv[3]) and prints the answer.
RAW = """
import asyncio, sys
import cbor2
from lazily_transports import LinkConfig, dial
from lazily_queue.client import protocol as P
from lazily_queue.replicated.client_sessions import new_session_id

async def main():
    stream = await dial(sys.argv[1], LinkConfig(peer_id=0, session_id="x",
                                                secret={token!r}, credential="web"))
    await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id("web")]))
    assert cbor2.loads(await stream.receive())[1] == P.OK
    if sys.argv[2] == "cbor":
        await stream.send(bytes([0x82, 0x02, 0x1f]))
    else:
        await stream.send(b"\\x00" * (int(sys.argv[3]) + 1))
    try:
        print(cbor2.loads(await stream.receive()), flush=True)
    except Exception as exc:
        print("link ended", type(exc).__name__, flush=True)

asyncio.run(main())
""".replace("{token!r}", repr(TOKEN))


async def run_client(script: str, *args: str) -> asyncio.subprocess.Process:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), str(ROOT / "transports"), os.environ.get("PYTHONPATH")])))
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, *args, stdout=asyncio.subprocess.PIPE, env=env)


def lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    """The lines of the member's client server and of the transports at ``level``."""
    return [r.getMessage() for r in caplog.records if r.levelno == level
            and r.name.startswith(("lazily_queue.client", "lazily_transports"))]


async def settled() -> None:
    """Time for the member to see the link end (it logs once it did)."""
    await asyncio.sleep(1.0)


async def test_a_killed_client_is_one_info_line_naming_it(caplog: pytest.LogCaptureFixture,
                                                          ) -> None:
    caplog.set_level(logging.DEBUG)
    async with one_member() as node:
        assert node.listen is not None
        for _ in range(3):  # killed mid-push: a reset or an end of stream, both normal
            caplog.clear()
            proc = await run_client(PUSHING, node.listen)
            assert proc.stdout is not None
            async with asyncio.timeout(60):
                assert await proc.stdout.readline() == b"ready\n"
            await asyncio.sleep(0.3)
            proc.kill()
            await proc.wait()
            await settled()
            assert lines(caplog, logging.WARNING) == []
            said = [line for line in lines(caplog, logging.INFO) if "link closed" in line]
            assert len(said) == 1, said
            assert said[0].startswith("client 'web' link closed (peer went away"), said


async def test_a_client_sending_an_unreadable_frame_is_one_warning_naming_it(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with one_member() as node:
        assert node.listen is not None
        proc = await run_client(RAW, node.listen, "cbor")
        assert proc.stdout is not None
        async with asyncio.timeout(60):
            answer = await proc.stdout.readline()
        assert b"refused" in answer
        await proc.wait()
        await settled()
        warnings = lines(caplog, logging.WARNING)
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith("client 'web' sent a frame the member cannot read"), warnings
        assert "unreadable" in warnings[0] or "frame" in warnings[0]


async def test_a_client_sending_a_frame_over_its_limit_is_one_warning_naming_it(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with one_member() as node:
        assert node.listen is not None
        assert node.clients is not None
        limit = node.clients.max_request_bytes
        proc = await run_client(RAW, node.listen, "huge", str(limit))
        assert proc.stdout is not None
        async with asyncio.timeout(60):
            assert (await proc.stdout.readline()).startswith(b"link ended")
        await proc.wait()
        await settled()
        warnings = lines(caplog, logging.WARNING)
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith(
            "client 'web' link closed: the client broke the link protocol (peer announced "
            f"a frame of {limit + 1} bytes"), warnings
        assert P.MIN_REQUEST_BYTES <= limit
