"""Two of three member processes whose disks fill: the third cannot commit, and its
error (to a client, and to its own application: ``NoQuorum`` once they were silent past
the grace period, ``CommitTimeout`` when a deadline comes first, a client's
``Unreachable`` when its session could not be registered) names the silent members and
the likely cause, their full disks, with how to check it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import CommitTimeout, NoQuorum, Unreachable, connect
from tests.tmpfs import fill, mounted_tmpfs

from .node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOKEN = "token-of-the-disk-test"
CLIENT = "\n".join(['[[client]]', 'name = "producer"', 'token_env = "TOKEN_PRODUCER"',
                    'produce = ["*"]'])
CAUSE = "members 2, 3 are linked to node 1 but sent no Raft message for"
CHECK = ('A member falls silent so while it cannot write its journal (a full or failing '
         'disk): check their logs for "cannot write its journal"')


def _config(root: Path, node: int, data_dir: Path, app: str = "") -> Path:
    path = write_config(root / f"n{node}.toml", node, unix_peers(root), extra=CLIENT,
                        data_dir=str(data_dir), app=app)
    path.write_text(path.read_text().replace('durability = "none"\n', ""))
    return path


async def test_a_majority_of_full_disks_is_named_to_the_member_left(short_tmp: Path) -> None:
    with mounted_tmpfs(short_tmp / "d2", "size=4m") as disk2, \
            mounted_tmpfs(short_tmp / "d3", "size=4m") as disk3:
        procs = [NodeProc(_config(short_tmp, 1, short_tmp / "data1", 'entry = "node_app:probe"'),
                          env={"TOKEN_PRODUCER": TOKEN}),
                 NodeProc(_config(short_tmp, 2, disk2 / "data"), env={"TOKEN_PRODUCER": TOKEN}),
                 NodeProc(_config(short_tmp, 3, disk3 / "data"), env={"TOKEN_PRODUCER": TOKEN})]
        try:
            for proc in procs:
                await asyncio.to_thread(proc.wait_ready)
            await asyncio.to_thread(procs[0].wait_line, "acked ")
            fill(disk2)
            fill(disk3)
            async with connect([f"unix:{short_tmp}/n1.sock"], ("producer", TOKEN),
                               op_timeout=8) as client:
                q: Any = client.queue("big")
                with pytest.raises((NoQuorum, CommitTimeout, Unreachable)) as info:
                    for _ in range(100):  # 5 MB: more than the journals' space left
                        await q.push(b"x" * 50_000)
            for proc in procs[1:]:
                assert await asyncio.to_thread(
                    wait_for, lambda p=proc: not p.status()["disk"]["writable"], 15.0,
                    "a stalled disk")
            own = await asyncio.to_thread(
                procs[0].wait_line, "failed ", 60.0, lambda line: CAUSE in line)
        finally:
            for proc in procs:
                await asyncio.to_thread(proc.terminate)
    text = str(info.value)
    assert CAUSE in text and CHECK in text, text
    assert own.startswith(("failed NoQuorum: no quorum: ", "failed CommitTimeout: ")), own
    assert CHECK in own, own
