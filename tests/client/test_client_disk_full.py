"""A client of a member whose disk is full: its ops fail with ``StorageUnavailable`` at
their timeout without the client relinking in a loop meanwhile, and it is served again
once the disk has room."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from lazily_queue import StorageUnavailable, connect
from tests.cli.node_procs import NodeProc, wait_for, write_config
from tests.tmpfs import fill, mounted_tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

TOKEN = "token-of-the-producer"
CLIENTS = "\n".join(['durability = "fsync"', "[[client]]", 'name = "producer"',
                     'token_env = "TOKEN_PRODUCER"', 'produce = ["*"]'])


async def test_a_full_disk_fails_ops_at_their_timeout_without_relinking_in_a_loop(
    short_tmp: Path,
) -> None:
    with mounted_tmpfs(short_tmp / "disk", "size=3m") as disk:
        config = write_config(short_tmp / "n1.toml", 1, {1: f"unix:{short_tmp}/n1.sock"},
                              data_dir=str(disk / "data"), extra=CLIENTS)
        config.write_text(config.read_text().replace('durability = "none"\n', ""))
        member = NodeProc(config, env={"TOKEN_PRODUCER": TOKEN})
        try:
            member.wait_ready()
            member.wait_line("leader ")
            async with connect([f"unix:{short_tmp}/n1.sock"], ("producer", TOKEN),
                               op_timeout=3) as client:
                q = client.queue("q")
                await q.push("before")
                filler = fill(disk)
                while member.status()["disk"]["writable"]:  # the journal's spare room
                    try:
                        await q.push("x" * 4000)
                    except StorageUnavailable:
                        break
                links, started = client.links, time.monotonic()
                outcomes = await asyncio.gather(*(q.push(n) for n in range(32)),
                                                return_exceptions=True)
                took = time.monotonic() - started
                assert all(isinstance(o, StorageUnavailable) for o in outcomes), outcomes
                assert took < 3 + 1, f"the pushes failed after {took:.1f} s"
                # Every member answering that it cannot commit: the client tries again,
                # backing off, not on every answer.
                assert client.links - links <= 12, client.links - links
                os.remove(filler)
                wait_for(lambda: member.status()["disk"]["writable"], what="a writable disk")
                await q.push("after")
        finally:
            assert member.terminate() == 0, member.stderr()
    assert "Traceback" not in member.stderr(), member.stderr()
