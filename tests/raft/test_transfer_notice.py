"""A leader starting a leadership transfer names its target to its peers
(:mod:`lazily_queue.raft.transfer_notice`): the members then log the lost leader at
INFO, saying who takes over; only peers announcing the feature are told; a notice out
of place is a bad frame; a notice changes no Raft state."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.node import Node
from lazily_queue.raft.transfer_notice import TRANSFER, notice, read_notice
from lazily_queue.state_log import StateLog
from lazily_queue.testing import Cluster
from tests.raft.optional_links import three_nodes, until


def _network(node: Node) -> Any:
    return node.driver.network


def _state_lines(caplog: pytest.LogCaptureFixture, node: str) -> list[tuple[str, str]]:
    """What the state log of ``node`` said (another test of the worker may have left
    other loggers at INFO)."""
    return [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "lazily_queue.state" and r.getMessage().startswith(f"node {node}:")]


@asynccontextmanager
async def _led(caplog: pytest.LogCaptureFixture) -> AsyncIterator[tuple[Cluster, Node]]:
    """A 3-member in-process cluster, settled, and its leader; state lines captured."""
    caplog.set_level(logging.INFO, "lazily_queue.state")
    async with Cluster(3) as cluster:
        leader = await cluster.wait_for_leader()
        await cluster.settle()
        yield cluster, leader


async def test_a_manual_transfer_is_logged_at_info_by_every_member(
        caplog: pytest.LogCaptureFixture) -> None:
    async with _led(caplog) as (cluster, leader):
        await until(lambda: all(n.leader_id == leader.node_id for n in cluster.running),
                     "every member knows the leader")
        target, other = sorted(n.node_id for n in cluster.running if n is not leader)
        logs = [StateLog(node) for node in cluster.running]
        for log in logs:
            log.start()
        caplog.clear()
        assert await leader.transfer_leadership(target) == target
        await until(lambda: all(any("leader elected" in message for _, message in
                                     _state_lines(caplog, n.node_id)) for n in cluster.running),
                     "every member logged the new leader")
        for log in logs:
            await log.stop()
        term = cluster.node(target).driver.replica.engine.term
        old = leader.node_id
        assert _state_lines(caplog, other) == [
            ("INFO", f"node {other}: no leader (node {old} is handing leadership to node "
                     f"{target}; term {term})"),
            ("INFO", f"node {other}: leader elected: node {target} leads term {term}")]
        assert _state_lines(caplog, target) == [
            ("INFO", f"node {target}: no leader (node {old} is handing leadership to this "
                     f"node; term {term})"),
            ("INFO", f"node {target}: leader elected: this node leads term {term}")]
        assert _state_lines(caplog, old) == [
            ("INFO", f"node {old}: no leader (this node is handing leadership to node "
                     f"{target}; term {term})"),
            ("INFO", f"node {old}: leader elected: node {target} leads term {term}")]
        lost = [(r.leader, r.target, r.term) for r in caplog.records  # type: ignore[attr-defined]
                if getattr(r, "event", None) == "leader_lost"]
        assert lost == [(old, target, term)] * 3  # the JSON log's fields


@pytest.fixture
async def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[int, Node]]:
    """Three linked members; node 3 runs a version without the optional link features."""
    async with three_nodes(tmp_path, monkeypatch) as made:
        yield made


async def _lead(nodes: dict[int, Node], new: int) -> None:
    leader = next(n for n in nodes.values() if n.is_leader)
    if leader is not nodes[new]:
        await leader.transfer_leadership(new)
    await until(lambda: nodes[new].is_leader and all(
        n.leader_id == str(new) for n in nodes.values()), f"node {new} leads")


def _notices_sent(node: Node) -> list[tuple[int, bytes]]:
    """The notices ``node`` sends from now on (the list fills as it sends them)."""
    sent: list[tuple[int, bytes]] = []
    links = _network(node).mesh
    send = links.send_nowait

    def spy(peer: int, frame: bytes) -> bool:
        if frame.startswith(TRANSFER):
            sent.append((peer, frame))
        return bool(send(peer, frame))

    links.send_nowait = spy
    return sent


async def test_only_peers_announcing_the_feature_are_told(nodes: dict[int, Node]) -> None:
    await _lead(nodes, 1)
    assert _network(nodes[1]).transfers.capable == {"2"}
    assert _network(nodes[3]).transfers.capable == {"1", "2"}
    sent = _notices_sent(nodes[1])
    term = nodes[1].driver.replica.engine.term
    assert await nodes[1].transfer_leadership(3) == "3"
    assert sent == [(2, notice(term, "3"))]
    assert "1" in _network(nodes[2]).transfers.heard
    # Node 3 does not announce the feature: leading, it tells no one.
    sent = _notices_sent(nodes[3])
    assert await nodes[3].transfer_leadership(2) == "2"
    assert sent == []
    assert "3" not in _network(nodes[1]).transfers.heard
    assert all(node.driver.bad_frames == 0 for node in nodes.values())


@pytest.mark.parametrize("case", ["unannounced", "malformed"])
async def test_a_notice_out_of_place_is_a_bad_frame(nodes: dict[int, Node], case: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    await _lead(nodes, 1)  # the link closed is a follower's: leadership stays
    receiver = nodes[1]
    engine = receiver.driver.replica.engine
    term, leader = engine.term, receiver.leader_id
    # Node 3 did not announce the feature; node 2 did, but sends a notice without a term.
    sender, frame = (3, notice(term, "2")) if case == "unannounced" else (2, TRANSFER + b"2")
    assert frame is not None
    epoch, heard = _network(receiver).mesh.epoch(sender), dict(_network(receiver).transfers.heard)
    assert _network(nodes[sender]).mesh.send_nowait(1, frame)
    await until(lambda: receiver.driver.bad_frames == 1, "the frame refused")
    await until(lambda: _network(receiver).mesh.epoch(sender) > epoch, "the link redialed")
    assert _network(receiver).transfers.heard == heard  # what node 2 said leading, if it led
    assert "malformed Raft frame" in caplog.text and "Traceback" not in caplog.text
    assert (engine.term, receiver.leader_id) == (term, leader)


async def test_a_malformed_notice_is_a_bad_frame_in_process(
        caplog: pytest.LogCaptureFixture) -> None:
    async with Cluster(3) as cluster:
        leader = await cluster.wait_for_leader()
        await cluster.settle()
        follower = next(n for n in cluster.running if n is not leader)
        term = leader.driver.replica.engine.term
        _network(follower).send(leader.node_id, TRANSFER + f"{term}:".encode())
        await until(lambda: leader.driver.bad_frames == 1, "the frame refused")
        assert _network(leader).transfers.heard == {}
        assert "malformed Raft frame" in caplog.text and "Traceback" not in caplog.text
        assert leader.is_leader and leader.driver.replica.engine.term == term


async def test_a_notice_changes_no_raft_state() -> None:
    async with Cluster(3) as cluster:
        leader = await cluster.wait_for_leader()
        await cluster.settle()
        engine = leader.driver.replica.engine
        term = engine.term
        follower, other = sorted(n.node_id for n in cluster.running if n is not leader)
        # Said with no transfer behind it: the peers take it, and nothing else changes.
        assert _network(leader).tell_transfer(term, follower) == [follower, other]
        await until(lambda: all(leader.node_id in _network(n).transfers.heard
                                 for n in cluster.running if n is not leader), "the notice")
        await leader.queue("q").push("after")  # the leader still leads, with its followers
        assert leader.is_leader and engine.term == term
        assert all(n.leader_id == leader.node_id and n.driver.replica.engine.term == term
                   for n in cluster.running)
        assert all(n.driver.bad_frames == 0 for n in cluster.running)


@pytest.mark.parametrize(("frame", "said"), [
    (TRANSFER + b"7:2", (7, "2")),
    (TRANSFER + b"7:node:a", (7, "node:a")),
    (TRANSFER + b"7", None),
    (TRANSFER + b":2", None),
    (TRANSFER + b"-1:2", None),
    (TRANSFER + b"7:", None),
    (TRANSFER + b"7:\n", None),
    (TRANSFER + b"7:\xff", None),
    (TRANSFER + b"7:" + b"2" * 65, None),
    (TRANSFER + b"1" * 21 + b":2", None),
    (b"\x00transfer", None),
])
def test_a_notice_is_read_only_when_well_formed(frame: bytes,
                                                said: tuple[int, str] | None) -> None:
    assert read_notice(frame) == said
    assert notice(7, "x" * 65) is None  # never sends what a peer would refuse


async def test_a_handover_that_does_not_finish_still_warns(
        caplog: pytest.LogCaptureFixture) -> None:
    async with _led(caplog) as (cluster, leader):
        me = leader.node_id
        others = sorted(n.node_id for n in cluster.running if n is not leader)
        log = StateLog(leader)
        log.start()
        caplog.clear()
        term = leader.driver.replica.engine.term
        _network(leader).tell_transfer(term, others[0])
        # Cut off, the leader steps down; no leader comes where it is.
        cluster.isolate(me)

        def leaderless() -> list[tuple[str, str]]:
            return [line for line in _state_lines(caplog, me) if "no leader" in line[1]]

        await until(lambda: len(leaderless()) >= 2, "the handover late")
        await log.stop()
        cluster.heal()
        assert leaderless() == [
            ("INFO", f"node {me}: no leader (this node is handing leadership to node "
                     f"{others[0]}; term {term})"),
            ("WARNING", f"node {me}: no leader (this node's handover to node {others[0]} "
                        f"did not finish; term {term})")]
