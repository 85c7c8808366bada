"""Two processes with one member id: a copy of a running member's data directory started
elsewhere is refused by the members and exits with one line naming the cause, while
the member keeps its links; a member whose old process went silent (a host that
rebooted) is taken back once its link has been quiet for about an election timeout."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from .node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = pytest.mark.slow


def _configs(tmp_path: Path) -> tuple[dict[int, str], list[Path]]:
    addresses = unix_peers(tmp_path)
    configs = []
    for i in (1, 2, 3):
        path = write_config(tmp_path / f"n{i}.toml", i, addresses)
        path.write_text(path.read_text().replace('durability = "none"', 'durability = "fsync"'))
        configs.append(path)
    return addresses, configs


def _copy_of_node(tmp_path: Path, addresses: dict[int, str], node: int = 1) -> Path:
    """A node's data directory copied as it runs, started at another address."""
    shutil.copytree(tmp_path / f"data{node}", tmp_path / f"copy{node}",
                    ignore=shutil.ignore_patterns("*.lock", "lock"))
    path = write_config(tmp_path / f"copy{node}.toml", node,
                        {**addresses, node: f"unix:{tmp_path}/copy{node}.sock"},
                        data_dir=f"copy{node}")
    path.write_text(path.read_text().replace('durability = "none"', 'durability = "fsync"'))
    return path


def _downs(proc: NodeProc, peer: int) -> int:
    """How many times ``proc``'s link to ``peer`` went down so far."""
    return proc.stderr().count(f"peer {peer} down")


def _linked(proc: NodeProc, peer: int) -> bool:
    return str(peer) in proc.status()["connected"]


@pytest.mark.parametrize("node", [1, 3])
def test_a_copied_data_directory_is_refused_while_its_member_runs(
    tmp_path: Path, node: int,
) -> None:
    """Node 1's copy dials the others; node 3's copy, dialed by none, probes them: either
    way it is refused and the others keep their one link to the real node."""
    addresses, configs = _configs(tmp_path)
    procs = [NodeProc(config) for config in configs]
    others = [proc for i, proc in enumerate(procs, 1) if i != node]
    copy: NodeProc | None = None
    try:
        for proc in procs:
            proc.wait_ready()
        wait_for(lambda: all(p.status()["leader"] is not None for p in procs), what="a leader")
        wait_for(lambda: all(_linked(p, node) for p in others), what=f"node {node} linked")
        downs = [_downs(p, node) for p in others]
        copy = NodeProc(_copy_of_node(tmp_path, addresses, node))
        assert copy.wait_exit(30) == 2
        errors = [line for line in copy.stderr().splitlines() if line.startswith("error:")]
        assert len(errors) == 1, copy.stderr()
        assert f"two processes share id {node}" in errors[0]
        assert "Traceback" not in copy.stderr()
        # The member kept its links all along and the cluster still answers.
        assert procs[0].status()["leader"] is not None
        assert all(_linked(p, node) for p in others)
        assert [_downs(p, node) for p in others] == downs  # never dropped for the copy
        for proc in others:
            assert proc.terminate() == 0
            assert f"a copy of node {node}'s data directory runs elsewhere" in proc.stderr()
    finally:
        if copy is not None:
            copy.terminate()
        for proc in procs:
            proc.terminate()


def test_a_member_whose_old_process_went_silent_is_taken_back(tmp_path: Path) -> None:
    addresses, configs = _configs(tmp_path)
    procs = [NodeProc(config) for config in configs]
    again: NodeProc | None = None
    try:
        for proc in procs:
            proc.wait_ready()
        wait_for(lambda: all(p.status()["leader"] is not None for p in procs), what="a leader")
        # The old process stops answering with its sockets open, as a host that
        # rebooted would look from the others; the new one starts from its data.
        os.kill(procs[0].proc.pid, signal.SIGSTOP)
        again = NodeProc(_copy_of_node(tmp_path, addresses))
        again.wait_ready()
        again.wait_line("leader ", timeout=30)
        # The others may still hold the stopped process's link until its silence passes
        # the window; the new process is linked to both once they let it go.
        wait_for(lambda: sorted(again.status()["connected"]) == ["2", "3"], timeout=30,
                 what="the new process of node 1 linked to nodes 2 and 3")
        assert _linked(procs[1], 1) and _linked(procs[2], 1)
    finally:
        os.kill(procs[0].proc.pid, signal.SIGKILL)
        if again is not None:
            again.terminate()
        for proc in procs:
            proc.terminate()
