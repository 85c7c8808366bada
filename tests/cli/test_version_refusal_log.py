"""A node started among members of an older version: the refusals it logs before its
one-line exit."""

from __future__ import annotations

from pathlib import Path

from .node_procs import OLDER_CLI, NodeProc, unix_peers, write_config


def test_a_node_among_older_members_logs_one_refusal_line_before_its_exit(
    tmp_path: Path,
) -> None:
    peers = unix_peers(tmp_path)
    older = [NodeProc(write_config(tmp_path / f"node{i}.toml", i, peers), cli=OLDER_CLI)
             for i in (1, 2)]
    try:
        for proc in older:
            proc.wait_ready()
        older[0].wait_line("leader ")
        new = NodeProc(write_config(tmp_path / "node3.toml", 3, peers))
        assert new.wait_exit(30) == 2
        lines = new.stderr().splitlines()
        assert lines[-1].startswith("error: ")
        assert "runs an older version of lazily-queue than this node" in lines[-1]
        before = lines[:-1]
        assert 1 <= len(before) <= 2, before
        assert all("handshake failed on 'features'" in line for line in before), before
    finally:
        for proc in older:
            proc.terminate()
