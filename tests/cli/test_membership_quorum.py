"""`lazily-queue members add|remove` on a real cluster with a member SIGKILLed: a change
that would leave the cluster without a quorum is refused with one line saying what to
do, and the cluster keeps accepting writes; removing the dead member first works."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .node_procs import CLI, NodeProc, unix_peers, wait_for, write_config

pytestmark = pytest.mark.slow
ADMIN_ENV = "LAZILY_TEST_ADMIN"
ADMIN = {ADMIN_ENV: "membership-quorum-admin-token"}


def _members(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "members", *args, "--url", url, "--token-env", ADMIN_ENV,
                           "--timeout", "5"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **ADMIN})


def _ids(proc: NodeProc) -> list[str]:
    return [m["id"] for m in proc.status()["members"]]


def test_a_change_that_would_lose_the_quorum_is_refused(tmp_path: Path) -> None:
    addresses = unix_peers(tmp_path, (1, 2, 3, 4))
    extra = f'admin_token_env = "{ADMIN_ENV}"'
    procs = [NodeProc(write_config(tmp_path / f"n{i}.toml", i,
                                   {p: addresses[p] for p in (1, 2, 3)}, extra=extra),
                      env=ADMIN)
             for i in (1, 2, 3)]
    try:
        for proc in procs:
            proc.wait_ready()
        wait_for(lambda: procs[0].status()["leader"] is not None, what="a leader")
        leader = procs[0].status()["leader"]
        dead = next(i for i in (1, 2, 3) if str(i) != leader)
        alive = next(i for i in (1, 2, 3) if str(i) not in (leader, str(dead)))
        procs[dead - 1].proc.kill()  # SIGKILL
        procs[dead - 1].proc.wait(10)
        url = str(procs[alive - 1].url)
        wait_for(lambda: not next(m for m in procs[alive - 1].status()["members"]
                                  if m["id"] == str(dead))["reachable"]
                 or procs[alive - 1].status()["leader"] != leader,
                 what="the dead member seen unreachable")

        added = _members(url, "add", "4", addresses[4])
        assert added.returncode == 1, added.stdout
        error = added.stderr.splitlines()[-1]
        assert error.startswith("error: unsafe_change: adding node 4 would leave the cluster "
                                "without a quorum"), added.stderr
        assert f"remove {dead}" in error and "nothing was changed" in error
        removed = _members(url, "remove", str(alive))
        assert removed.returncode == 1, removed.stdout
        assert "error: unsafe_change: removing node" in removed.stderr
        assert _ids(procs[alive - 1]) == ["1", "2", "3"]
        moved = _members(url, "transfer", str(dead))
        assert moved.returncode == 1, moved.stdout
        assert moved.stderr.splitlines()[-1].startswith(
            f"error: refused: node {dead} is unreachable from the leader"), moved.stderr

        listed = subprocess.run([*CLI, "queue", "list", "--url", url, "--token-env",
                                 ADMIN_ENV, "--timeout", "5"], capture_output=True, text=True,
                                timeout=60, env={**os.environ, **ADMIN})
        assert listed.returncode == 0, listed.stderr  # the cluster still has its quorum

        done = _members(url, "remove", str(dead))
        assert done.returncode == 0, done.stderr
        config = write_config(tmp_path / "n4.toml", 4,
                              {p: addresses[p] for p in (1, 2, 3, 4) if p != dead}, extra=extra)
        done = _members(url, "add", "4", addresses[4])
        assert done.returncode == 0, done.stderr
        procs.append(NodeProc(config, env=ADMIN))
        procs[-1].wait_ready()
        wait_for(lambda: procs[-1].status()["leader"] is not None, what="node 4 joining")
        assert sorted(_ids(procs[-1])) == sorted(str(i) for i in (1, 2, 3, 4) if i != dead)
    finally:
        for proc in procs:
            proc.terminate()



def test_without_a_quorum_the_cli_says_no_leader_can_be_elected(tmp_path: Path) -> None:
    """The leader and another member SIGKILLed: `status --require-leader` fails saying
    the survivor reaches no majority (whether or not it still names the dead leader,
    which it stops doing after two election timeouts of silence), and `members` says no
    leader can be elected."""
    addresses = unix_peers(tmp_path)
    extra = f'admin_token_env = "{ADMIN_ENV}"'
    procs = [NodeProc(write_config(tmp_path / f"n{i}.toml", i, addresses, extra=extra),
                      env=ADMIN)
             for i in (1, 2, 3)]
    try:
        for proc in procs:
            proc.wait_ready()
        leader = wait_for(lambda: procs[0].status()["leader"], what="a leader")
        survivor = next(i for i in (1, 2, 3) if str(i) != leader)
        for i in (1, 2, 3):
            if i != survivor:
                procs[i - 1].proc.kill()  # SIGKILL
                procs[i - 1].proc.wait(10)
        url = str(procs[survivor - 1].url)
        wait_for(lambda: not procs[survivor - 1].status()["has_quorum"], what="quorum lost")
        down = ", ".join(str(i) for i in (1, 2, 3) if i != survivor)

        status = subprocess.run([*CLI, "status", "--url", url, "--require-leader"],
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 3, status.stderr
        assert status.stderr.startswith("error: the node reaches no majority of the members")
        assert f"unreachable: {down})" in status.stderr
        wait_for(lambda: procs[survivor - 1].status()["leader"] is None,
                 what="the dead leader no longer named")
        status = subprocess.run([*CLI, "status", "--url", url, "--require-leader"],
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 3, status.stderr
        assert status.stderr.startswith("error: the node reaches no majority of the members, "
                                        "so no leader can be elected"), status.stderr

        removed = _members(url, "remove", "3")
        assert removed.returncode == 1, removed.stdout
        assert removed.stderr.splitlines() == [
            f"error: not_leader: node {survivor} is not the leader; membership changes are "
            f"made on the leader, and no leader can be elected: node {survivor} reaches 1 of "
            f"the 3 members and 2 are needed; start the unreachable ones ({down}), then ask "
            "again"], removed.stderr
    finally:
        for proc in procs:
            proc.terminate()
