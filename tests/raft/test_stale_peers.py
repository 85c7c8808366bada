"""A member's link down at one address for a whole look interval, and tried there in
vain, moves between its ``[peers]`` address and the one the cluster recorded; a member
that links at neither is said to be down once per
:data:`~lazily_queue.stale_peers.DOWN_EVERY`, and two spellings of one place are one
address."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.stale_peers import DOWN_EVERY, StalePeers


class _Mesh:
    def __init__(self, peers: dict[int, str]) -> None:
        self.peers = peers
        self.up: set[int] = set()
        self.epochs = dict.fromkeys(peers, 0)
        #: Failed dials at each peer's current address (the link dials at once unless not).
        self.failed = dict.fromkeys(peers, 1)
        self.dials_at_once = True

    def epoch(self, peer: int) -> int:
        return self.epochs[peer]

    def is_up(self, peer: int) -> bool:
        return peer in self.up

    def failed_here(self, peer: int) -> int:
        return self.failed[peer]

    def readdress(self, peer: int, address: str) -> None:
        self.peers[peer] = address
        self.failed[peer] = int(self.dials_at_once)


class _Node:
    node_id = "1"

    def __init__(self, peers: dict[str, str], recorded: dict[str, str]) -> None:
        self.peers = peers
        self._recorded = recorded

    def recorded_address(self, member: str) -> str | None:
        return self._recorded.get(member)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lines(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.levelno >= level]
    caplog.clear()
    return lines


def test_a_link_down_moves_between_the_two_addresses(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lazily_queue.stale_peers")
    node = _Node({"1": "tcp://me:1", "3": "tcp://old:3", "4": "tcp://d:4"},
                 {"3": "tcp://new:3", "4": "tcp://d:4"})
    mesh = _Mesh({3: "tcp://old:3", 4: "tcp://d:4", 5: "tcp://e:5"})
    stale = StalePeers(node)  # type: ignore[arg-type]
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3" and _lines(caplog, logging.INFO) == []
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://new:3"
    [moved] = _lines(caplog, logging.INFO)
    assert "member 3 has not linked at tcp://old:3 for 10 s: trying tcp://new:3, its " \
        "address the cluster recorded" in moved
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3"  # not at the recorded one either: back
    mesh.up.add(3)
    mesh.epochs[3] = 1  # it came up at its [peers] address: nothing to say
    caplog.clear()
    stale.look(mesh)  # type: ignore[arg-type]
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3" and _lines(caplog, logging.INFO) == []
    # Members 4 (one address) and 5 (none recorded) are never moved.
    assert mesh.peers[4] == "tcp://d:4" and mesh.peers[5] == "tcp://e:5"
    assert stale.moved == 2


def test_a_link_moves_on_only_once_its_address_was_tried() -> None:
    """A link whose next dial comes later than the look interval (its backoff, a slow
    dial) stays at the address it was moved to until a dial there failed."""
    node = _Node({"3": "tcp://old:3"}, {"3": "tcp://new:3"})
    mesh = _Mesh({3: "tcp://old:3"})
    mesh.dials_at_once = False
    stale = StalePeers(node)  # type: ignore[arg-type]
    stale.look(mesh)  # type: ignore[arg-type]
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://new:3"
    for _ in range(3):
        stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://new:3" and stale.moved == 1
    mesh.failed[3] = 1  # a dial at the recorded address failed
    stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[3] == "tcp://old:3" and stale.moved == 2


def test_a_member_down_at_both_addresses_is_said_down_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lazily_queue.stale_peers")
    clock = _Clock()
    node = _Node({"3": "tcp://old:3"}, {"3": "tcp://new:3"})
    mesh = _Mesh({3: "tcp://old:3"})
    stale = StalePeers(node, clock=clock)  # type: ignore[arg-type]
    said: list[str] = []
    for _ in range(30):  # 300 s of looks every 10 s
        stale.look(mesh)  # type: ignore[arg-type]
        said += _lines(caplog, logging.INFO)
        clock.now += 10
    assert stale.moved == 29  # it keeps trying both, saying so once
    [move, down] = said
    assert "member 3 has not linked at tcp://old:3 for 10 s: trying tcp://new:3" in move
    assert "stale" not in down
    assert ("member 3 links neither at tcp://old:3, its address in this node's [peers], "
            "nor at tcp://new:3, the address the cluster recorded for it: it looks down"
            in down)
    for _ in range(int(DOWN_EVERY // 10)):
        stale.look(mesh)  # type: ignore[arg-type]
        said += _lines(caplog, logging.INFO)
        clock.now += 10
    assert len(said) == 3 and "it looks down" in said[2]  # once more after DOWN_EVERY
    mesh.up.add(3)  # back, then down again: said again at once
    mesh.epochs[3] = 1
    stale.look(mesh)  # type: ignore[arg-type]
    mesh.up.clear()
    for _ in range(4):
        stale.look(mesh)  # type: ignore[arg-type]
    assert sum("it looks down" in line for line in _lines(caplog)) == 1


def test_two_spellings_of_one_place_are_not_moved_between(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, logger="lazily_queue.stale_peers")
    monkeypatch.chdir(tmp_path)
    node = _Node({"2": "tcp://localhost:7001", "3": "unix:./n3.sock",
                  "4": "unix:n4.sock", "5": "tcp://localhost:7005"},
                 {"2": "tcp://127.0.0.1:7001", "3": f"unix://{tmp_path}/n3.sock",
                  "4": f"unix:{os.path.relpath(tmp_path / 'x' / '..' / 'n4.sock')}",
                  "5": "tcp://127.0.0.1:7006"})
    mesh = _Mesh({2: "tcp://localhost:7001", 3: "unix:./n3.sock", 4: "unix:n4.sock",
                  5: "tcp://localhost:7005"})
    stale = StalePeers(node)  # type: ignore[arg-type]
    for _ in range(5):
        stale.look(mesh)  # type: ignore[arg-type]
    assert mesh.peers[2] == "tcp://localhost:7001"
    assert mesh.peers[3] == "unix:./n3.sock" and mesh.peers[4] == "unix:n4.sock"
    lines: list[Any] = _lines(caplog, logging.INFO)
    assert lines and all("member 5 " in line for line in lines)  # another port: moved
    assert stale.moved == 4


def test_a_member_linked_at_its_recorded_address_names_the_entry_to_fix_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_queue.stale_peers")
    node = _Node({"3": "tcp://old:3"}, {"3": "tcp://new:3"})
    mesh = _Mesh({3: "tcp://old:3"})
    stale = StalePeers(node)  # type: ignore[arg-type]
    for _ in range(2):
        stale.look(mesh)  # type: ignore[arg-type]
    assert _lines(caplog) == []  # one address tried: nothing known yet
    mesh.up.add(3)
    mesh.epochs[3] = 1
    for _ in range(3):
        stale.look(mesh)  # type: ignore[arg-type]
    lines: list[Any] = _lines(caplog)
    assert len(lines) == 1
    assert "member 3 linked at tcp://new:3, the address the cluster recorded for it" in lines[0]
    assert "set member 3's [peers] entry to tcp://new:3 in node 1's configuration" in lines[0]
