"""``members transfer`` while a producer pushes about 250 elements a second: every
transfer hands leadership over, and every push is applied once."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from .node_procs import NodeProc, unix_peers, wait_for, write_config
from .test_admin_cli import TOKEN, TOKEN_LINE, lq

pytestmark = pytest.mark.slow

COUNT = 1_000_000  # at 250 pushes/s: a producer that runs until the test stops it


def test_transfers_under_steady_writes(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    stop = tmp_path / "stop"
    app = f'entry = "node_app:paced"\nrate = 250\ncount = {COUNT}\nstop = "{stop}"'
    configs = [write_config(tmp_path / f"n{i}.toml", i, peers, extra=TOKEN_LINE,
                            app=app if i == 1 else "")
               for i in (1, 2, 3)]
    procs = [NodeProc(c, env={"LAZILY_TEST_ADMIN": TOKEN}) for c in configs]
    try:
        urls = [p.wait_ready() for p in procs]
        wait_for(lambda: procs[0].status()["queues"].get("q", {}).get("len", 0) > 250,
                 what="the producer under way")
        moved, lengths = [], [procs[0].status()["queues"]["q"]["len"]]
        for turn in range(6):
            leader = procs[0].status()["leader"]
            target = str(1 + (int(leader) + turn % 2) % 3)
            out = lq("members", "transfer", target, "--url", urls[0])
            assert out.returncode == 0, (turn, out.stderr)
            assert out.stdout.strip() == f"node {target} leads now"
            moved.append(target)
            lengths.append(procs[0].status()["queues"]["q"]["len"])
        # Writes went on through every transfer: the queue grew across each of them.
        assert all(a < b for a, b in pairwise(lengths)), lengths
        stop.touch()
        done = procs[0].wait_line("pushed ", timeout=60)
        pushed = int(done.split()[1])
        assert done.startswith(f"pushed {pushed} failed 0 "), done
        assert pushed >= lengths[-1], (pushed, lengths)
        wait_for(lambda: all(p.status()["queues"]["q"]["len"] == pushed for p in procs),
                 what="every push applied once on every node")
    finally:
        for proc in procs:
            proc.terminate()
