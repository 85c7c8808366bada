"""A member process whose small disk has less room than the leader's snapshot it needs:
its status says so with the sizes (and its health is critical), and it installs the
snapshot and catches up once room is made."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import Limits, connect
from lazily_queue.health import health
from tests.tmpfs import mounted_tmpfs

from .node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOKEN = "token-of-the-small-disk-test"
GRANT = "\n".join(['[[client]]', 'name = "app"', 'token_env = "SMALL_TOKEN"',
                   'produce = ["*"]', 'consume = ["*"]'])


def _status(proc: NodeProc) -> dict[str, Any]:
    return proc.status()


def _leave_free(directory: Path, room: int) -> Path:
    """A file taking all but about ``room`` bytes of ``directory``'s file system."""
    fs = os.statvfs(directory)
    keep = directory / "keep"
    keep.write_bytes(bytes(max(0, fs.f_bavail * fs.f_frsize - room)))
    return keep


async def test_a_member_without_room_for_the_snapshot_says_so_and_takes_it_once_freed(
        short_tmp: Path) -> None:
    peers = unix_peers(short_tmp)
    with mounted_tmpfs(short_tmp / "d3", "size=2m") as disk:
        configs = {i: write_config(short_tmp / f"n{i}.toml", i, peers, extra=GRANT,
                                   data_dir=str(disk / "data" if i == 3
                                                else short_tmp / f"data{i}"))
                   for i in (1, 2, 3)}
        procs = {i: NodeProc(configs[i], env={"SMALL_TOKEN": TOKEN}) for i in (1, 2)}
        try:
            for i in (1, 2):  # one of them leads
                await asyncio.to_thread(procs[i].wait_ready)
            procs[3] = NodeProc(configs[3], env={"SMALL_TOKEN": TOKEN})
            await asyncio.to_thread(procs[3].wait_ready)
            async with connect([peers[1], peers[2]], ("app", TOKEN), op_timeout=30) as c:
                q: Any = c.queue("q")
                await q.push("first")
                await asyncio.to_thread(
                    wait_for, lambda: _status(procs[3])["last_applied"] > 0, 30.0,
                    "member 3 applied the first push")
                behind = _status(procs[3])["log_last_index"]
                await asyncio.to_thread(procs[3].pause)
                for _ in range(30):  # about 600 kB the snapshot holds
                    await q.push_many(["k" * 1000] * 20)
                leader = procs[int(_status(procs[1])["leader"])]
                churn: Any = c.queue("churn", limits=Limits(max_length=2,
                                                            overflow="drop_oldest"))
                while _status(leader)["log_first_index"] <= behind:  # compacted past it
                    await churn.push_many(["z" * 3000] * 20)
            keep = _leave_free(disk, 256 * 1024)
            os.kill(procs[3].proc.pid, 18)  # SIGCONT
            error = await asyncio.to_thread(
                wait_for, lambda: _status(procs[3])["disk"]["snapshot_error"], 60.0,
                "the snapshot refused")
            assert "No space left on device" in error and "it needs " in error, error
            assert "of 2,097,152 are free: make room" in error, error
            status = _status(procs[3])
            assert status["snapshots_installed"] == 0
            seen = health({**status, "members": []}, [])
            assert seen["level"] == "critical", seen
            keep.unlink()
            await asyncio.to_thread(
                wait_for, lambda: _status(procs[3])["snapshots_installed"] >= 1, 60.0,
                "the snapshot installed")
            assert _status(procs[3])["disk"]["snapshot_error"] is None
            assert _status(procs[3])["queues"]["q"]["len"] == 601
        finally:
            for proc in procs.values():
                await asyncio.to_thread(proc.terminate)
    err = procs[3].stderr()
    assert err.count("could not store the snapshot from the leader") == 1, err
    assert "stored the snapshot from the leader" in err, err
