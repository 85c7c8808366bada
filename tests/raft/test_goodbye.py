"""A member stopping cleanly says goodbye on its links (:mod:`lazily_queue.raft.goodbye`):
only to peers announcing the feature; one from a peer that did not announce it, or a
malformed one, is refused as a bad frame; a goodbye changes no Raft state."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lazily_queue import clean_stop
from lazily_queue.node import Node
from lazily_queue.raft import mesh
from lazily_queue.raft.goodbye import GOODBYE, Goodbyes
from lazily_queue.state_log import StateLog
from lazily_queue.status import STOPPED, node_status
from lazily_queue.testing import Cluster
from tests.raft.optional_links import three_nodes, until


@pytest.fixture
async def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[int, Node]]:
    """Three linked members; node 3 runs a version without the goodbye feature."""
    async with three_nodes(tmp_path, monkeypatch) as made:
        yield made


def _stop_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the clean stop logged (another test of the worker may have left other
    loggers at INFO)."""
    return [r for r in caplog.records if r.name == "lazily_queue.clean_stop"]


def _network(node: Node) -> Any:
    return node.driver.network


async def _node_1_leads(nodes: dict[int, Node]) -> None:
    leader = next(n for n in nodes.values() if n.is_leader)
    if leader is not nodes[1]:
        await leader.transfer_leadership(1)
    await until(lambda: nodes[1].is_leader and all(
        n.leader_id == "1" for n in nodes.values()), "node 1 leads")


def _goodbyes_sent(node: Node) -> list[int]:
    """The peers ``node`` sends a goodbye to from now on (the list fills as it sends)."""
    sent: list[int] = []
    links = _network(node).mesh
    send = links.send_nowait

    def spy(peer: int, frame: bytes) -> bool:
        if frame == GOODBYE:
            sent.append(peer)
        return bool(send(peer, frame))

    links.send_nowait = spy
    return sent


async def test_only_peers_announcing_the_feature_are_told(nodes: dict[int, Node]) -> None:
    sent = _goodbyes_sent(nodes[1])
    assert _network(nodes[1]).goodbyes.capable == {"2"}
    assert _network(nodes[2]).goodbyes.capable == {"1"}
    assert _network(nodes[3]).goodbyes.capable == {"1", "2"}
    await nodes[1].stop()
    assert sent == [2]
    await until(lambda: "1" in _network(nodes[2]).goodbyes.said, "node 2 told")
    assert _network(nodes[3]).goodbyes.said == set()
    assert nodes[3].driver.bad_frames == 0


async def test_a_member_that_did_not_announce_the_feature_says_no_goodbye(
    nodes: dict[int, Node],
) -> None:
    sent = _goodbyes_sent(nodes[3])
    await nodes[3].stop()  # its peers would refuse one: it did not announce the feature
    assert sent == []
    assert nodes[1].driver.bad_frames == nodes[2].driver.bad_frames == 0


@pytest.mark.parametrize("case", ["unannounced", "malformed"])
async def test_a_goodbye_out_of_place_is_a_bad_frame(nodes: dict[int, Node], case: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    # Node 3 did not announce the feature; node 2 did, but sends bytes that are no goodbye.
    sender, frame = (3, GOODBYE) if case == "unannounced" else (2, GOODBYE + b"!")
    await _node_1_leads(nodes)  # the link closed is a follower's: leadership stays
    receiver = nodes[1]
    term, leader = receiver.driver.replica.engine.term, receiver.leader_id
    epoch = _network(receiver).mesh.epoch(sender)
    assert _network(nodes[sender]).mesh.send_nowait(1, frame)
    await until(lambda: receiver.driver.bad_frames == 1, "the frame refused")
    await until(lambda: _network(receiver).mesh.epoch(sender) > epoch, "the link redialed")
    assert _network(receiver).goodbyes.said == set()
    assert "malformed Raft frame" in caplog.text and "Traceback" not in caplog.text
    assert (receiver.driver.replica.engine.term, receiver.leader_id) == (term, leader)


async def test_a_goodbye_changes_no_raft_state(nodes: dict[int, Node]) -> None:
    leader = next(n for n in nodes.values() if n.is_leader)
    # Nodes 1 and 2 announce the feature: one tells the other (the leader, unless 3 leads).
    sender, receiver = (2, 1) if leader is nodes[1] else (1, 2)
    engine = leader.driver.replica.engine
    term = engine.term
    assert _network(nodes[sender]).say_goodbye() == [str(receiver)]
    await until(lambda: str(sender) in _network(nodes[receiver]).goodbyes.said, "the goodbye")
    await leader.queue("q").push("after")  # the leader still leads, with its followers
    assert leader.is_leader and engine.term == term
    assert all(node.driver.bad_frames == 0 for node in nodes.values())


async def test_a_leader_that_said_so_is_an_info_line(
        nodes: dict[int, Node], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "lazily_queue.state")
    await _node_1_leads(nodes)  # node 2 is to be told, node 3 not
    logs = {i: StateLog(nodes[i]) for i in (2, 3)}
    for log in logs.values():
        log.start()

    async def kept(node: Node) -> None:
        return None

    monkeypatch.setattr("lazily_queue.node.hand_over_leadership", kept)
    await nodes[1].stop()
    await until(lambda: nodes[2].leader_id not in (None, "1"), "a new leader")

    def lost(node: int) -> list[tuple[str, str]]:
        return [(r.levelname, r.getMessage()) for r in caplog.records
                if r.getMessage().startswith((f"node {node}: member 1 lost",
                                              f"node {node}: member 1 stopped"))]

    # Reported once not back within the settling time (the logs started just now).
    await until(lambda: lost(2) and lost(3), "the members' losses reported")
    assert lost(2) == [("INFO", "node 2: member 1 stopped (it said so before closing its "
                                "links)")]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records
             if r.name == "lazily_queue.state" and r.getMessage().startswith("node 2:")]
    assert any(level == "INFO" and message.startswith("node 2: no leader (node 1 stopped; "
                                                      "term ") for level, message in lines)
    assert [line for line in lines if line[0] != "INFO"] == [], lines
    # Node 3 was not told: it reports the loss as before.
    assert lost(3)[0][0] == "WARNING" and "node 3: member 1 lost: " in lost(3)[0][1]
    for log in logs.values():
        await log.stop()


def _leader(members: set[str], connected: set[str], stopping: set[str]) -> Any:
    engine = SimpleNamespace(members=members, connected=connected)
    goodbyes = Goodbyes()
    goodbyes.said |= stopping
    return SimpleNamespace(node_id="1", is_leader=True, driver=SimpleNamespace(
        replica=SimpleNamespace(engine=engine), network=SimpleNamespace(goodbyes=goodbyes)))


@pytest.mark.parametrize(("members", "connected", "stopping", "why"), [
    ({"1", "2", "3"}, {"1"}, set(), "no follower is linked"),
    ({"1", "2", "3", "4", "5"}, {"1", "2"}, set(), "no quorum: 2 of 5 members are linked"),
    ({"1", "2", "3"}, {"1", "2", "3"}, {"2", "3"}, "every linked follower is stopping too"),
])
async def test_a_leader_without_a_follower_to_take_over_stops_saying_so(
        members: set[str], connected: set[str], stopping: set[str], why: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "lazily_queue.clean_stop")
    leader = _leader(members, connected, stopping)
    assert await clean_stop.hand_over_leadership(leader) is None
    assert [(r.levelname, r.getMessage()) for r in _stop_records(caplog)] == [
        ("INFO", f"node 1: stopping without handing leadership over: {why}")]


def test_a_new_link_clears_what_was_said_on_the_last() -> None:
    goodbyes = Goodbyes()
    assert not goodbyes.take("2")  # not announced: refused
    goodbyes.linked("2", frozenset({mesh.GOODBYE_FEATURE}))
    assert goodbyes.take("2") and goodbyes.said == {"2"}
    goodbyes.up("2")
    assert goodbyes.said == set()
    goodbyes.linked("2", frozenset())
    assert not goodbyes.take("2")


async def test_an_in_process_cluster_hands_over_and_closes_without_waiting(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "lazily_queue.clean_stop")
    async with Cluster(3) as cluster:
        leader = await cluster.wait_for_leader()
        await leader.queue("q").push(1)
        await leader.stop()
        handed = [r.getMessage() for r in _stop_records(caplog)]
        assert len(handed) == 1 and handed[0].startswith(
            f"node {leader.node_id}: leadership handed to node "), handed
        new = handed[0].split("handed to node ")[1].split()[0]
        assert (await cluster.wait_for_leader()).node_id == new
        caplog.clear()
    # Closing the cluster, every member said it stops: none is handed leadership.
    assert [r.getMessage() for r in _stop_records(caplog)] == [
        f"node {new}: stopping without handing leadership over: every linked follower is "
        "stopping too"]


async def test_the_status_names_a_member_that_stopped_cleanly(nodes: dict[int, Node]) -> None:
    """A member that said goodbye is shown as stopped cleanly; one that could not say so
    (node 3 lacks the feature) keeps the link's own account."""
    await _node_1_leads(nodes)
    await nodes[2].stop()
    await nodes[3].stop()
    await until(lambda: not nodes[1].status()["connected"], "both links down")
    status = node_status(nodes[1])
    problems = {m["id"]: m["link_problem"] for m in status["members"]}
    assert problems["2"] == STOPPED
    assert problems["3"] != STOPPED
    assert f"member 2: {STOPPED}" in status["health"]["reasons"]


async def test_a_member_that_stopped_cleanly_and_answers_again_is_shown_as_it_is(
        nodes: dict[int, Node], tmp_path: Path) -> None:
    """Node 2 said goodbye, then runs again with another secret: node 1's dial is
    refused, and the status says so rather than that node 2 stopped."""
    await _node_1_leads(nodes)
    await nodes[2].stop()
    await until(lambda: "2" not in nodes[1].status()["connected"], "node 2's link down")
    assert _problem(nodes[1], "2") == STOPPED and not _network(nodes[1]).mesh.answered(2)
    peers = {i: f"unix://{tmp_path}/n{i}.sock" for i in (1, 2, 3)}  # as three_nodes has
    again = Node(2, data_dir=tmp_path / "2-again", peers=peers, secret=b"another secret",
                 durability="none")
    async with again:
        await until(lambda: _network(nodes[1]).mesh.answered(2), "node 2 answers")
        problem = _problem(nodes[1], "2")
        assert problem != STOPPED and problem, problem
        assert "secret" in problem, problem


async def test_a_member_refusing_dials_as_it_stops_is_still_shown_as_stopped_cleanly(
        nodes: dict[int, Node]) -> None:
    """Node 2 closes its link to node 3 slowly as it stops (a partitioned peer's close):
    meanwhile node 1 dials it again and is refused, the node shutting down; that refusal
    is no answer of a running member, and node 2 is shown as stopped cleanly."""
    await _node_1_leads(nodes)
    link = _network(nodes[2]).mesh._links[3]
    close = link.aclose

    async def slow_close(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(1.0)
        return await close(*args, **kwargs)

    link.aclose = slow_close
    await nodes[2].stop()
    await until(lambda: "2" not in nodes[1].status()["connected"], "node 2's link down")
    assert _problem(nodes[1], "2") == STOPPED
    assert not _network(nodes[1]).mesh.answered(2)


def _problem(node: Node, member: str) -> str | None:
    return next(m["link_problem"] for m in node_status(node)["members"] if m["id"] == member)


async def test_a_stop_goes_on_whatever_the_goodbye_or_the_transfer_meets(
        nodes: dict[int, Node], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "lazily_queue.clean_stop")
    await _node_1_leads(nodes)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(_network(nodes[1]), "say_goodbye", broken)
    monkeypatch.setattr(clean_stop.membership, "transfer_leadership", broken)
    await nodes[1].stop()
    assert not nodes[1].driver.running
    assert [r.getMessage() for r in _stop_records(caplog)] == [
        "node 1: could not tell its peers it is stopping: RuntimeError('boom')",
        "node 1: stopping without handing leadership over: the transfer failed: "
        "RuntimeError('boom')"]


async def test_a_member_says_goodbye_once(nodes: dict[int, Node]) -> None:
    """``testing.Cluster.close`` has each member say it stops before its ``stop`` says
    so again: the second time sends nothing."""
    sent = _goodbyes_sent(nodes[1])
    assert clean_stop.say_goodbye(nodes[1]) == ["2"]
    await nodes[1].stop()
    assert sent == [2]
