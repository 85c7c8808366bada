"""A member removed from the cluster (`lazily-queue members remove`) and left running
says why it lost its peers: they refuse it as not a member, so it was removed, and what
to do; not "check that node N runs". Its status says so too, not "follower"."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from .node_procs import CLI, NodeProc, unix_peers, wait_for, write_config

ADMIN_ENV = "LAZILY_TEST_ADMIN"
ADMIN = {ADMIN_ENV: "removed-member-log-admin-token"}


def test_a_removed_member_left_running_says_it_was_removed(tmp_path: Path) -> None:
    addresses = unix_peers(tmp_path)
    extra = f'admin_token_env = "{ADMIN_ENV}"'
    procs = {i: NodeProc(write_config(tmp_path / f"n{i}.toml", i, addresses, extra=extra),
                         env=ADMIN)
             for i in (1, 2, 3)}
    try:
        for proc in procs.values():
            proc.wait_ready()
        leader = wait_for(lambda: procs[1].status()["leader"], what="a leader")
        removed = next(i for i in procs if str(i) != leader)
        others = [i for i in procs if i != removed]
        victim = procs[removed]
        wait_for(lambda: all(f"member {i} reachable" in victim.stderr() for i in others),
                 what="links up")
        mark = len(victim.stderr())
        asked = time.time()
        done = subprocess.run(
            [*CLI, "members", "remove", str(removed), "--url", str(procs[others[0]].url),
             "--token-env", ADMIN_ENV, "--timeout", "5"],
            capture_output=True, text=True, timeout=60, env={**os.environ, **ADMIN})
        assert done.returncode == 0, done.stderr

        def lost() -> list[str]:
            return [line for line in victim.stderr()[mark:].splitlines()
                    if "lazily_queue.state" in line and " lost: " in line]

        lines = wait_for(lambda: len(lost()) >= 2 and lost(), what="both members lost")
        assert len(lines) == 2, lines
        for member in others:
            line = next(line for line in lines if f"member {member} lost: " in line)
            assert "lost: it refuses this node as not a member" in line, victim.stderr()[mark:]
            assert "this node was removed from the cluster: stop it, or add it again " \
                f"with `lazily-queue members add {removed} ADDRESS`" in line, line
            assert "check that node" not in line, line

        status = victim.status()
        assert status["removed"]["refused_by"] == [str(i) for i in others], status["removed"]
        assert asked <= status["removed"]["since"] <= time.time(), status["removed"]
        me = next(m for m in status["members"] if m["self"])
        assert me["role"] == "removed", me
        fix = f"stop it, or add it again with `lazily-queue members add {removed} ADDRESS`"
        first = status["health"]["reasons"][0]
        assert first.startswith("this node was removed from the cluster: member(s) "
                                f"{', '.join(str(i) for i in others)} refuse it as not a "
                                "member since "), first
        assert fix in first, first
        shown = subprocess.run([*CLI, "status", "--url", str(victim.url)], capture_output=True,
                               text=True, timeout=60, env={**os.environ, "COLUMNS": "400"})
        assert shown.returncode == 0, shown.stderr
        assert "REMOVED (" in shown.stdout and "this node was removed" in shown.stdout, \
            shown.stdout
        assert " removed " in next(line for line in shown.stdout.splitlines()
                                   if "(this node)" in line), shown.stdout
        required = subprocess.run([*CLI, "status", "--url", str(victim.url),
                                   "--require-leader"], capture_output=True, text=True,
                                  timeout=60)
        assert required.returncode == 3, required.stderr
        assert required.stderr.startswith("error: this node was removed from the cluster: "), \
            required.stderr
        assert required.stderr.count("\n") == 1 and fix in required.stderr, required.stderr
    finally:
        for proc in procs.values():
            proc.terminate()
