"""Two spellings of one address in a node's file (``localhost`` and ``127.0.0.1``, a
relative and an absolute socket path) are one address."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue.config import ConfigError

from .test_node_config import parse


@pytest.mark.parametrize(
    ("peers", "message"),
    [
        ({"2": "tcp://localhost:7001"}, r"peer 2 has this node's own listen address "
         r"'tcp://127.0.0.1:7001' \('tcp://localhost:7001' leads there\); if this node is 2"),
        ({"2": "tcp://localhost:7002", "3": "tcp://127.0.0.1:7002"},
         r"peers 2 and 3 share the address 'tcp://127.0.0.1:7002' \('tcp://localhost:7002' "
         r"leads there\); give each member its own"),
    ],
)
def test_two_spellings_of_one_address_are_one_address(
    tmp_path: Path, peers: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(tmp_path, peers=peers)


def test_this_node_listed_under_another_spelling_of_its_listen_address(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse(tmp_path, listen="unix:n1.sock",
                   peers={"1": f"unix://{tmp_path}/n1.sock", "2": "unix:n2.sock"})
    assert config.peers == {2: "unix:n2.sock"}  # type: ignore[attr-defined]
    assert parse(tmp_path, peers={"1": "tcp://localhost:7001"}).listen == (  # type: ignore[attr-defined]
        "tcp://127.0.0.1:7001")
