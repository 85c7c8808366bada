"""``members transfer`` while a producer pushes about 250 elements a second: every
transfer hands leadership over, and every push is applied once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .node_procs import NodeProc, unix_peers, wait_for, write_config
from .test_admin_cli import TOKEN, TOKEN_LINE, lq

pytestmark = pytest.mark.slow

COUNT = 4000  # 16 s at 250 pushes/s


def test_transfers_under_steady_writes(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    configs = [write_config(tmp_path / f"n{i}.toml", i, peers, extra=TOKEN_LINE,
                            app=f'entry = "node_app:paced"\nrate = 250\ncount = {COUNT}'
                            if i == 1 else "")
               for i in (1, 2, 3)]
    procs = [NodeProc(c, env={"LAZILY_TEST_ADMIN": TOKEN}) for c in configs]
    try:
        urls = [p.wait_ready() for p in procs]
        wait_for(lambda: procs[0].status()["queues"].get("q", {}).get("len", 0) > 250,
                 what="the producer under way")
        moved = []
        for turn in range(6):
            leader = procs[0].status()["leader"]
            target = str(1 + (int(leader) + turn % 2) % 3)
            out = lq("members", "transfer", target, "--url", urls[0])
            assert out.returncode == 0, (turn, out.stderr)
            assert out.stdout.strip() == f"node {target} leads now"
            moved.append(target)
        assert procs[0].status()["queues"]["q"]["len"] < COUNT, "transfers ran after the writes"
        done = procs[0].wait_line("pushed ", timeout=60)
        assert done.startswith(f"pushed {COUNT} failed 0 "), done
        wait_for(lambda: all(p.status()["queues"]["q"]["len"] == COUNT for p in procs),
                 what="every push applied once on every node")
    finally:
        for proc in procs:
            proc.terminate()
