"""Takes one client has in flight together through a member SIGKILLed before it answers
them (real node processes): sent again through another member, each is answered with
its own elements, or, when its session had no room left for it, takes nothing and goes
again once the others are answered; every element is popped exactly once and none
raises ``ResultNotKept``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import pytest

from lazily_queue import connect
from tests.cli.node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

TOKEN = "token-of-the-take-room-test"
CLIENTS = ('[[client]]\nname = "web"\ntoken_env = "TOKEN_WEB"\nproduce = ["*"]\n'
           'consume = ["*"]')
#: 40 elements of 900 kB: a take holds four (3.6 MiB), three full takes more than the
#: 8 MiB a client's session keeps.
VALUES = [bytes([i]) * 900_000 for i in range(40)]


class _Proxy:
    """A unix socket relaying one client's links to a member; once :attr:`holding`,
    what the member sends is dropped (its answers never reach the client)."""

    def __init__(self, member: str) -> None:
        self.member = member
        self.holding = False
        self.links: list[asyncio.StreamWriter] = []
        self.server: asyncio.AbstractServer | None = None

    async def start(self, path: Path) -> None:
        self.server = await asyncio.start_unix_server(self._link, path)

    async def _link(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
                    ) -> None:
        self.links.append(client_w)
        try:
            member_r, member_w = await asyncio.open_unix_connection(self.member)
        except OSError:
            client_w.close()
            return
        self.links.append(member_w)

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, answers: bool
                       ) -> None:
            with contextlib.suppress(OSError):
                while data := await r.read(65536):
                    if not (answers and self.holding):
                        w.write(data)
                        await w.drain()
            w.close()

        await asyncio.gather(pump(client_r, member_w, False), pump(member_r, client_w, True))

    def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.links:
            w.close()


async def test_takes_in_flight_through_a_killed_member_pop_every_element_once(
    short_tmp: Path,
) -> None:
    peers = unix_peers(short_tmp)
    configs = [write_config(short_tmp / f"n{i}.toml", i, peers, extra=CLIENTS)
               for i in (1, 2, 3)]
    procs = [NodeProc(config, env={"TOKEN_WEB": TOKEN}) for config in configs]
    try:
        for proc in procs:
            await asyncio.to_thread(proc.wait_ready)
        leader = await asyncio.to_thread(
            wait_for, lambda: procs[0].status().get("leader"), what="a leader")
        doomed = next(i for i in (1, 2, 3) if str(i) != str(leader))
        others = [peers[i] for i in (1, 2, 3) if i != doomed]
        proxy = _Proxy(peers[doomed].removeprefix("unix:"))
        await proxy.start(short_tmp / "px.sock")
        async with connect([f"unix:{short_tmp}/px.sock", *others], ("web", TOKEN),
                           prefer_leader=False, ping_timeout=30.0) as client, \
                connect(others[:1], ("web", TOKEN), prefer_leader=False) as watcher:
            q = client.queue("q")
            for value in VALUES:
                await q.push(value)
            await client.barrier()
            seen = watcher.queue("q")
            while seen.len() != len(VALUES):  # the watcher's mirror holds the queue
                await watcher.barrier()
                await asyncio.sleep(0.05)
            proxy.holding = True  # the takes apply; their answers are lost with the member
            takes = [asyncio.create_task(q.pop_many(256)) for _ in range(4)]

            async def applied() -> None:
                while True:
                    await watcher.barrier()
                    if seen.len() <= len(VALUES) - 9:  # three takes applied at least
                        return
                    await asyncio.sleep(0.05)

            await asyncio.wait_for(applied(), 30)
            await asyncio.sleep(0.5)  # the fourth too
            procs[doomed - 1].proc.send_signal(signal.SIGKILL)
            proxy.close()
            taken = [v for values in await asyncio.gather(*takes) for v in values]
            assert len(taken) == 13  # 4 + 4 + 1, then 4 once the room was whole
            while len(taken) < len(VALUES):
                taken += await asyncio.wait_for(q.pop_many(256), 10)
            assert sorted(taken) == VALUES  # each popped once, none lost
    finally:
        for proc in procs:
            await asyncio.to_thread(proc.terminate)
