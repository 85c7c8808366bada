"""A member started with another cluster secret, again and again (as a supervisor
restarts it), is refused by the running members each time: each logs the refusal once
at WARNING, with the setting to compare, and again only after a link succeeded."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from lazily_transports import AuthenticationError, HandshakeError, IncompatiblePeerError

from lazily_queue.link_trouble import RefusalHints

from .node_procs import NodeProc, unix_peers, wait_for, write_config


def _refusals(proc: NodeProc) -> list[str]:
    return [line for line in proc.stderr().splitlines()
            if "cluster-secret" in line and (" WARNING " in line or " ERROR " in line)]


def test_a_wrong_secret_is_logged_once_until_a_link_succeeds(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    configs = {i: write_config(tmp_path / f"n{i}.toml", i, peers) for i in peers}
    running = [NodeProc(configs[1]), NodeProc(configs[2])]
    try:
        for proc in running:
            proc.wait_ready()
            proc.wait_line("leader ")
        for _ in range(2):  # the second start is refused as the first: not said again
            assert NodeProc(configs[3], secret="not-the-secret").wait_exit(30) == 2
        for proc in running:
            lines = _refusals(proc)
            assert len(lines) == 1, lines
            assert "peer 3 failed the cluster-secret challenge" in lines[0]
            assert "`secret_env` / `secret_file`" in lines[0]
        right = NodeProc(configs[3])
        right.wait_ready()
        for proc in running:
            wait_for(lambda p=proc: "member 3 reachable" in p.stderr(), what="3 linked")
        right.terminate()
        assert NodeProc(configs[3], secret="not-the-secret").wait_exit(30) == 2
        for proc in running:  # said again: a link succeeded since
            assert len(_refusals(proc)) == 2, _refusals(proc)
    finally:
        for proc in running:
            proc.terminate()


@pytest.mark.parametrize("error", [
    AuthenticationError("the client token does not match (wrong token?)"),
    IncompatiblePeerError("credential", "unknown client credential 'intruder'"),
    AuthenticationError("client 'web' authenticates with its token, not 'certificate'"),
])
def test_a_refused_client_is_not_logged_as_a_member_of_another_secret(
        error: HandshakeError) -> None:
    """Any client (or stranger naming one) refused for its name or token: the member's
    line says to check the client's credentials, not the cluster secret."""
    record = logging.LogRecord("lazily_transports.handshake", logging.WARNING, __file__, 1,
                               "handshake with %s refused: %s", ("unix:n1.sock#peer", error),
                               None)
    assert RefusalHints().filter(record)
    line = record.getMessage()
    assert "[[client]] tables" in line and "secret is not concerned" in line, line
    assert "secrets differ" not in line and "unique `id`" not in line
