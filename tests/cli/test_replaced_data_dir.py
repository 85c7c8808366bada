"""A member restarted with its data directory emptied by hand: the others refuse it and
it exits at once (status 2) with one line naming the cause and the commands that fix it;
the cluster goes on, and nothing it held changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = pytest.mark.slow


def test_a_member_whose_data_directory_was_emptied(tmp_path: Path) -> None:
    addresses = unix_peers(tmp_path)
    configs = [write_config(tmp_path / f"n{i}.toml", i, addresses,
                            app='entry = "node_app:run"\npush = 3' if i == 1 else "")
               for i in (1, 2, 3)]
    procs = [NodeProc(config) for config in configs]
    try:
        for proc in procs:
            proc.wait_ready()
        wait_for(lambda: procs[2].status()["queues"].get("orders", {}).get("len") == 3,
                 what="3 orders on node 3")
        assert procs[2].terminate() == 0
        shutil.rmtree(tmp_path / "data3")
        procs[2] = NodeProc(configs[2])
        assert procs[2].wait_exit() == 2
        errors = [line for line in procs[2].stderr().splitlines() if line.startswith("error:")]
        assert len(errors) == 1, procs[2].stderr()
        assert "share id 3" in errors[0]
        assert "`lazily-queue members remove ID` on a member" in errors[0]
        assert "Traceback" not in procs[2].stderr()
        assert procs[0].status()["queues"]["orders"]["len"] == 3
        assert procs[0].status()["leader"] is not None
    finally:
        for proc in procs:
            proc.terminate()
