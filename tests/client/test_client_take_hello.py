"""Takes sent on a new link before its member answered the hello (a real node process):
they wait for that answer and go in the sized form, so they are held to their session's
room; sent at once in the plain form they would take more than the 8 MiB its session
keeps and give up the first takes' results, and those sent again once their answers were
lost would raise ``ResultNotKept``."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path

import pytest

from lazily_queue import connect
from lazily_queue.client import protocol as P
from tests.cli.node_procs import NodeProc, unix_peers, write_config
from tests.client.test_client_take_room import CLIENTS, TOKEN, VALUES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

#: A client's hello request as it crosses a unix socket link: ``[rid, HELLO, VERSION,
#: session]`` in CBOR.
HELLO = re.compile(b"\\x84(?:[\\x00-\\x17]|\\x18.|\\x19..|\\x1a....)"
                   + bytes([P.HELLO, P.VERSION]), re.DOTALL)


class MutedProxy:
    """A unix socket relaying a client's links to a member; while :attr:`muting`, a
    new link's member answers from the client's hello on never reach the client (the
    handshake before it passes)."""

    def __init__(self, member: str) -> None:
        self.member = member
        self.muting = False
        #: Set as a link is relayed.
        self.linked = asyncio.Event()
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.AbstractServer | None = None

    async def start(self, path: Path) -> None:
        self.server = await asyncio.start_unix_server(self._link, path)

    async def _link(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
                    ) -> None:
        member_r, member_w = await asyncio.open_unix_connection(self.member)
        self.writers += [client_w, member_w]
        self.linked.set()
        muting, greeted = self.muting, False

        async def up() -> None:
            nonlocal greeted
            with contextlib.suppress(OSError):
                while data := await client_r.read(65536):
                    greeted = greeted or HELLO.search(data) is not None
                    member_w.write(data)
                    await member_w.drain()
            member_w.close()

        async def down() -> None:
            with contextlib.suppress(OSError):
                while data := await member_r.read(65536):
                    if not (muting and greeted):
                        client_w.write(data)
                        await client_w.drain()
            client_w.close()

        await asyncio.gather(up(), down())

    def drop(self) -> None:
        """End the links relayed so far (the client links again)."""
        for w in self.writers:
            w.close()

    def close(self) -> None:
        assert self.server is not None
        self.server.close()
        self.drop()


async def test_takes_sent_before_the_hello_is_answered_keep_their_results(
    short_tmp: Path,
) -> None:
    peers = unix_peers(short_tmp, (1,))
    proc = NodeProc(write_config(short_tmp / "n1.toml", 1, peers, extra=CLIENTS),
                    env={"TOKEN_WEB": TOKEN})
    try:
        await asyncio.to_thread(proc.wait_ready)
        proxy = MutedProxy(peers[1].removeprefix("unix:"))
        await proxy.start(short_tmp / "px.sock")
        async with connect([f"unix:{short_tmp}/px.sock"], ("web", TOKEN),
                           prefer_leader=False, ping_timeout=30.0) as client:
            q = client.queue("q")
            for value in VALUES:
                await q.push(value)
            await client.barrier()
            proxy.muting = True  # the next link is never greeted nor answered
            proxy.linked.clear()
            proxy.drop()
            await asyncio.wait_for(proxy.linked.wait(), 10)
            takes = [asyncio.create_task(q.pop_many(256)) for _ in range(4)]
            await asyncio.sleep(2.0)  # sent at once in the plain form, all four apply
            proxy.muting = False
            proxy.drop()  # the next link is answered: every take goes (again) on it
            taken = [v for values in await asyncio.gather(*takes) for v in values]
            while len(taken) < len(VALUES):
                taken += await asyncio.wait_for(q.pop_many(256), 10)
            assert sorted(taken) == VALUES  # each popped once, none lost
        proxy.close()
    finally:
        await asyncio.to_thread(proc.terminate)
