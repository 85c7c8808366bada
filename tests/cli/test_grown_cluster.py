"""A cluster grown from one founder with ``lazily-queue members add``, as real processes:
it keeps a majority when the founder is SIGKILLed, and the founder, restarted with its
first configuration (itself alone), finds the others and catches up."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .node_procs import CLI, NodeProc, unix_peers, wait_for, write_config

pytestmark = pytest.mark.slow
ADMIN_ENV = "LAZILY_TEST_ADMIN"
ADMIN = {ADMIN_ENV: "grown-cluster-admin-token"}


def _admin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--token-env", ADMIN_ENV, "--timeout", "20"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **ADMIN})


def _len(proc: NodeProc) -> int | None:
    queue: dict[str, int] = proc.status()["queues"].get("orders", {})
    return queue.get("len")


def test_a_grown_cluster_survives_losing_its_founder(tmp_path: Path) -> None:
    addresses = unix_peers(tmp_path)
    extra = f'admin_token_env = "{ADMIN_ENV}"'
    founder_config = write_config(tmp_path / "n1.toml", 1, {1: addresses[1]}, extra=extra,
                                  app='entry = "node_app:run"\npush = 5')
    procs = [NodeProc(founder_config, env=ADMIN)]
    try:
        founder_url = procs[0].wait_ready()
        wait_for(lambda: _len(procs[0]) == 5, what="the founder's pushes")
        for i in (2, 3):
            config = write_config(tmp_path / f"n{i}.toml", i,
                                  {p: addresses[p] for p in range(1, i + 1)}, extra=extra)
            procs.append(NodeProc(config, env=ADMIN))
            added = _admin("members", "add", str(i), addresses[i], "--url", founder_url)
            assert added.returncode == 0, added.stderr
            procs[-1].wait_ready()
        wait_for(lambda: all(_len(p) == 5 for p in procs), what="5 orders on every node")

        procs[0].proc.kill()  # SIGKILL
        procs[0].proc.wait(10)
        # Nodes 2 and 3 were added one after the other: they must reach each other.
        purged = _admin("queue", "purge", "orders", "--url", str(procs[1].url))
        assert purged.returncode == 0, purged.stderr + purged.stdout
        wait_for(lambda: _len(procs[2]) == 0, what="the purge on node 3")

        procs[0] = NodeProc(founder_config, env=ADMIN)  # its first configuration, alone
        procs[0].wait_ready()
        # Its app pushes 5 orders again: they commit once it is back in the cluster.
        wait_for(lambda: all(_len(p) == 5 for p in procs), timeout=30,
                 what="the restarted founder's pushes on every node")
        doc = procs[0].status()
        assert [m["id"] for m in doc["members"]] == ["1", "2", "3"]
        # the two agree on the leader (on a loaded machine an election may be under way)
        wait_for(lambda: procs[0].status()["leader"] is not None
                 and procs[0].status()["leader"] == procs[1].status()["leader"],
                 timeout=30, what="the founder and node 2 naming one leader")
    finally:
        for proc in procs:
            proc.terminate()
