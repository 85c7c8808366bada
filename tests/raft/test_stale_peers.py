"""A member's link down at one address for a whole look interval moves between its
``[peers]`` address and the one the cluster recorded, each move said once."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lazily_queue.stale_peers import StalePeers


class _Mesh:
    def __init__(self, peers: dict[int, str]) -> None:
        self.peers = peers
        self.up: set[int] = set()
        self.epochs = dict.fromkeys(peers, 0)

    def epoch(self, peer: int) -> int:
        return self.epochs[peer]

    def is_up(self, peer: int) -> bool:
        return peer in self.up

    def readdress(self, peer: int, address: str) -> None:
        self.peers[peer] = address


class _Node:
    node_id = "1"

    def __init__(self, peers: dict[str, str], recorded: dict[str, str]) -> None:
        self.peers = peers
        self._recorded = recorded

    def recorded_address(self, member: str) -> str | None:
        return self._recorded.get(member)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records]
    caplog.clear()
    return lines


def test_a_link_down_moves_between_the_two_addresses(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_queue.stale_peers")
    node = _Node({"1": "tcp://me:1", "3": "tcp://old:3", "4": "tcp://d:4"},
                 {"3": "tcp://new:3", "4": "tcp://d:4"})
    mesh = _Mesh({3: "tcp://old:3", 4: "tcp://d:4", 5: "tcp://e:5"})
    stale = StalePeers(node)  # type: ignore[arg-type]
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3" and _lines(caplog) == []  # first look: no move
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://new:3"
    [moved] = _lines(caplog)
    assert "member 3 has not linked at tcp://old:3, its address in this node's [peers]" in moved
    assert "set its [peers] entry to tcp://new:3 in node 1's configuration" in moved
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3"  # not at the recorded one either: back
    assert "at tcp://new:3, the address the cluster recorded" in _lines(caplog)[0]
    mesh.up.add(3)
    mesh.epochs[3] = 1  # it came up at its [peers] address: nothing to say
    stale.look(mesh)  # type: ignore[arg-type]
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3" and _lines(caplog) == []
    # Members 4 (one address) and 5 (none recorded) are never moved.
    assert mesh.peers[4] == "tcp://d:4" and mesh.peers[5] == "tcp://e:5"
    assert stale.moved == 2


def test_a_member_linked_at_its_recorded_address_names_the_entry_to_fix_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_queue.stale_peers")
    node = _Node({"3": "tcp://old:3"}, {"3": "tcp://new:3"})
    mesh = _Mesh({3: "tcp://old:3"})
    stale = StalePeers(node)  # type: ignore[arg-type]
    for _ in range(2):
        stale.look(mesh)  # type: ignore[arg-type]
    _lines(caplog)
    mesh.up.add(3)
    mesh.epochs[3] = 1
    for _ in range(3):
        stale.look(mesh)  # type: ignore[arg-type]
    lines: list[Any] = _lines(caplog)
    assert len(lines) == 1
    assert "member 3 linked at tcp://new:3, the address the cluster recorded for it" in lines[0]
    assert "set member 3's [peers] entry to tcp://new:3 in node 1's configuration" in lines[0]
