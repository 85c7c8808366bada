"""A member whose process is killed is reported once: a WARNING ``member N lost``
line naming why its link ended and what to check; the transport's own line about the
broken link is at DEBUG."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest

from .node_procs import NodeProc, unix_peers, wait_for, write_config


def _tcp_peers(ids: tuple[int, ...] = (1, 2, 3)) -> dict[int, str]:
    peers = {}
    for i in ids:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            peers[i] = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    return peers


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_a_killed_member_is_one_warning_with_its_cause(tmp_path: Path, kind: str) -> None:
    peers = _tcp_peers() if kind == "tcp" else unix_peers(tmp_path)
    configs = {i: write_config(tmp_path / f"n{i}.toml", i, peers) for i in peers}
    procs = {i: NodeProc(c) for i, c in configs.items()}
    try:
        for proc in procs.values():
            proc.wait_ready()
            proc.wait_line("leader ")
        leader = int(procs[1].status()["leader"])
        watcher = procs[leader]
        victim = min(i for i in procs if i != leader)
        wait_for(lambda: f"member {victim} reachable" in watcher.stderr(), what="link up")
        mark = len(watcher.stderr())
        # Stopped, the member leaves the leader's heartbeats unread: killed, its kernel
        # resets the connection (an error, not an orderly end) as a crash under load does.
        procs[victim].proc.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        procs[victim].proc.send_signal(signal.SIGKILL)
        procs[victim].proc.wait(10)
        lost = wait_for(lambda: [line for line in watcher.stderr()[mark:].splitlines()
                                 if f"member {victim} lost" in line], what="member lost")
        warnings = [line for line in watcher.stderr()[mark:].splitlines()
                    if " WARNING " in line or " ERROR " in line]
        assert warnings == lost, warnings
        assert "Connection reset by peer" in lost[0], lost
        assert f"check that node {victim} runs" in lost[0]
        assert f"reaches it at {peers[victim]}" in lost[0]
    finally:
        for proc in procs.values():
            proc.terminate()
