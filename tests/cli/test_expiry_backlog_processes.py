"""A backlog of 200,000 queue elements expired at one moment, on three node processes:
the leader's sweeps remove it a bounded part an entry, so no member's event loop is held
past the election timeout (one entry removing them all cost a leader change)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import connect

from .node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOKEN = "token-of-the-backlog-test"
CLIENT = "\n".join(['[[client]]', 'name = "filler"', 'token_env = "TOKEN_FILLER"',
                    'produce = ["*"]', 'consume = ["*"]', 'admin = ["*"]'])
BACKLOG = 200_000


def _leaders(procs: list[NodeProc]) -> set[tuple[Any, Any]]:
    return {(s["leader"], s["term"]) for s in (p.status() for p in procs)}


async def test_a_backlog_expired_at_one_moment_leaves_without_a_leader_change(
        tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    procs = [NodeProc(write_config(tmp_path / f"n{i}.toml", i, peers, extra=CLIENT),
                      env={"TOKEN_FILLER": TOKEN}) for i in peers]
    try:
        for proc in procs:
            await asyncio.to_thread(proc.wait_ready)
        wait_for(lambda: len(_leaders(procs)) == 1 and None not in next(iter(_leaders(procs))),
                 what="one leader every member knows")
        addresses = list(peers.values())
        async with connect(addresses, ("filler", TOKEN)) as filler:
            q: Any = filler.queue("backlog")
            await q.push_many(range(BACKLOG))
            for value in ("a", "b"):
                await q.push(value, ttl=3600.0)
            before = _leaders(procs)
            await asyncio.sleep(1.1)
        # every element pushed more than a second ago: a default ttl of 1 s (rules set
        # on a queue that had none) expires the whole backlog at the next sweep
        async with connect(addresses, ("filler", TOKEN)) as opener:
            await opener.queue("backlog", ttl=1.0).push("c", ttl=3600.0)
            started = time.monotonic()
            await asyncio.to_thread(wait_for, lambda: all(
                p.status()["queues"]["backlog"]["len"] == 3 for p in procs), 60.0,
                "the backlog gone on every member")
            assert time.monotonic() - started < 30
            assert _leaders(procs) == before, "the backlog's expiry cost a leader change"
            popped = [await opener.queue("backlog", ttl=1.0).pop() for _ in range(3)]
            assert popped == ["a", "b", "c"]
    finally:
        for proc in procs:
            await asyncio.to_thread(proc.terminate)
