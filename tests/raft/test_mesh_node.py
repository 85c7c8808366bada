"""Nodes over real authenticated Unix-socket links (the default network)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from lazily_queue import stale_peers
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from lazily_queue.raft import mesh
from lazily_queue.raft.features import (
    CLAIM_BYTES_FEATURE,
    ENDED_BY_OWNER_FEATURE,
    EXPIRE_LIMIT_FEATURE,
    GIVE_BACK_CHECKED_FEATURE,
    KEPT_BY_OWNER_FEATURE,
    SESSION_NONCE_FEATURE,
    TAKE_ROOM_FEATURE,
)


def _peers(tmp: Path, ids: list[int]) -> dict[int, str]:
    return {i: f"unix://{tmp}/n{i}.sock" for i in ids}


async def test_cluster_over_unix_sockets_and_a_wrong_secret_cannot_join(tmp_path: Path) -> None:
    # Node 4 is a member of the configuration (every node lists it), so only the
    # secret keeps the process started with the wrong one out.
    peers = _peers(tmp_path, [1, 2, 3, 4])
    nodes = [Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"right",
                  durability="none") for i in (1, 2, 3)]
    intruder = Node(4, data_dir=tmp_path / "4", peers=peers, secret=b"wrong", durability="none")
    for node in nodes:
        await node.start()
    await intruder.start()
    try:
        await nodes[0].wait_for_leader(timeout=10)
        q = nodes[1].queue("q")
        for i in range(20):
            await q.push(i)
        await nodes[2].barrier()
        assert nodes[2].queue("q").len() == 20
        mesh = intruder.driver.network.mesh  # type: ignore[attr-defined]
        async with asyncio.timeout(10):
            for member in (1, 2, 3):  # the intruder probes the members, which dial it in vain
                while "auth" not in (mesh.trouble(member) or ""):  # noqa: ASYNC110 - polls
                    await asyncio.sleep(0.05)
        assert intruder.status()["connected"] == []
        assert intruder.leader_id is None
        assert intruder.view.queues == {}
        for node in nodes:
            assert "4" not in node.status()["connected"]
    finally:
        await intruder.stop()
        for node in nodes:
            await node.stop()


def test_a_networked_node_needs_a_secret_and_integer_ids(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfiguration, match="secret is required"):
        Node(1, data_dir=tmp_path, listen="unix:///tmp/x.sock",
             durability="none")._default_network()
    with pytest.raises(InvalidConfiguration, match="not an integer"):
        Node("alpha", data_dir=tmp_path, listen="unix:///tmp/x.sock", secret=b"s",
             durability="none")._default_network()
    with pytest.raises(InvalidConfiguration, match="give `listen=`"):
        Node(1, data_dir=tmp_path, secret=b"s", durability="none")._default_network()


def test_a_networked_node_refuses_peers_at_its_own_or_a_shared_address(
        tmp_path: Path) -> None:
    a, b = f"unix://{tmp_path}/a.sock", f"unix://{tmp_path}/b.sock"
    with pytest.raises(InvalidConfiguration, match=(
            r"peer 2 has this node's own listen address .*; if this node is 2, give it id 2")):
        Node(1, data_dir=None, peers={1: a, 2: a, 3: b}, secret=b"s", durability="none")
    with pytest.raises(InvalidConfiguration, match="peers 2 and 3 share the address"):
        Node(1, data_dir=None, listen=a, peers={2: b, 3: b}, secret=b"s", durability="none")
    # Over a network of the caller's (tests, the simulator) addresses are its business.
    Node(1, data_dir=None, peers={1: "-", 2: "-", 3: "-"}, secret=b"s", durability="none",
         network=object())  # type: ignore[arg-type]


async def test_a_second_process_with_an_existing_id_is_refused(tmp_path: Path) -> None:
    peers = _peers(tmp_path, [1, 2, 3])
    nodes = [Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s", durability="none")
             for i in (1, 2, 3)]
    for node in nodes:
        await node.start()
    impostor: Node | None = None
    try:
        await nodes[0].wait_for_leader(timeout=10)
        await nodes[1].queue("q").push("before")
        # Same id as node 1, its own data directory and address, the real peers.
        impostor = Node(1, data_dir=tmp_path / "impostor", listen=f"unix://{tmp_path}/x.sock",
                        peers={2: peers[2], 3: peers[3]}, secret=b"s", durability="none")
        await impostor.start()

        def refused() -> list[int]:
            return [node.driver.network.mesh.counters(1).refused  # type: ignore[attr-defined]
                    for node in nodes[1:]]

        async with asyncio.timeout(10):
            while min(refused()) < 2:  # noqa: ASYNC110 - polls counters
                await asyncio.sleep(0.02)
        # Refused inside the handshake each time, after authentication: it never had a
        # link, and it was told why.
        assert impostor.status()["connected"] == []
        assert "two processes share id 1" in (
            impostor.driver.network.mesh.trouble(2) or "")  # type: ignore[attr-defined]
        assert impostor.leader_id is None and impostor.driver.replica.engine.term == 0
        assert impostor.view.queues == {}
        await nodes[2].queue("q").push("after")
        await nodes[0].barrier()
        assert nodes[0].queue("q").storage.elements() == ["before", "after"]  # type: ignore[attr-defined]
    finally:
        if impostor is not None:
            await impostor.stop()
        for node in nodes:
            await node.stop()


async def test_pins_survive_restart_and_removal_unpins(tmp_path: Path) -> None:
    peers = _peers(tmp_path, [1, 2, 3])
    node = Node(3, data_dir=tmp_path / "3", peers=peers, secret=b"s", durability="fsync")
    others = [Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s", durability="fsync")
              for i in (1, 2)]
    for n in (node, *others):
        await n.start()
    await node.wait_for_leader(timeout=10)
    await node.barrier()
    pins = dict(node.driver.replica.journal.meta["peer_incarnations"])
    assert set(pins) == {"1", "2"}
    incarnation = node.driver.replica.journal.meta["incarnation"]
    for n in (node, *others):
        await n.stop()
    again = Node(3, data_dir=tmp_path / "3", peers=peers, secret=b"s", durability="fsync")
    await again.start()
    try:
        assert again.driver.replica.journal.meta["incarnation"] == incarnation
        assert again.driver.replica.journal.meta["peer_incarnations"] == pins
        again.driver.network.remove_peer("2")
        assert "2" not in again.driver.network.incarnations.pins  # type: ignore[attr-defined]
        assert again.driver.replica.journal.meta["retired_incarnations"] == {"2": [pins["2"]]}
    finally:
        await again.stop()


def _stale_peer_lines(caplog: pytest.LogCaptureFixture, node_id: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lazily_queue.stale_peers"
            and r.getMessage().startswith(f"node {node_id}: ")]


@pytest.mark.parametrize("old_process", ["running", "stopped"])
async def test_a_member_added_back_elsewhere_is_linked_by_a_node_with_stale_peers(
    tmp_path: Path, old_process: str, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Node 3 is removed and added back at another address; a node whose [peers] still
    lists the old one (reaching nothing, or the removed process, refused by its retired
    incarnation) dials the address the cluster recorded instead, and says which [peers]
    entry to correct."""
    monkeypatch.setattr(stale_peers, "EVERY", 0.5)
    caplog.set_level(logging.WARNING)
    peers = _peers(tmp_path, [1, 2, 3])
    nodes = {i: Node(i, data_dir=tmp_path / str(i), peers=dict(peers), secret=b"s",
                     durability="none") for i in (1, 2, 3)}
    for node in nodes.values():
        await node.start()
    new3: Node | None = None
    try:
        await nodes[1].wait_for_leader(timeout=10)
        if nodes[3].is_leader:
            await nodes[3].transfer_leadership(1)
        leader = next(n for n in nodes.values() if n.is_leader)
        stale = nodes[2] if leader is nodes[1] else nodes[1]  # its [peers] keeps 3's old address
        await leader.queue("q").push("before")
        await leader.remove_member(3)
        async with asyncio.timeout(10):
            while "3" in stale.driver.replica.engine.members:  # noqa: ASYNC110 - polls
                await asyncio.sleep(0.02)
        if old_process == "stopped":
            await nodes[3].stop()
            async with asyncio.timeout(10):  # the stale node has seen that link end
                while "3" in stale.status()["connected"]:  # noqa: ASYNC110 - polls
                    await asyncio.sleep(0.02)
        # Node 3 is rebuilt elsewhere.
        moved = f"unix://{tmp_path}/moved3.sock"
        leader.peers["3"] = moved
        new3 = Node(3, data_dir=tmp_path / "new3", peers={**peers, 3: moved}, secret=b"s",
                    durability="none")
        await leader.add_member(3, moved)
        await new3.start()
        network = stale.driver.network
        async with asyncio.timeout(20):  # linked, and dialing the recorded address
            while not ("3" in stale.status()["connected"]  # noqa: ASYNC110 - polls
                       and network.mesh.peers[3] == moved):  # type: ignore[attr-defined]
                await asyncio.sleep(0.02)
        if old_process == "running":
            assert "belonged to a node 3 removed from the cluster" in caplog.text
        old = peers[3]
        async with asyncio.timeout(10):
            while not (told := [line for line in _stale_peer_lines(  # noqa: ASYNC110
                    caplog, stale.node_id) if f"member 3 linked at {moved}" in line]):
                await asyncio.sleep(0.1)
        assert f"lists {old}, a stale address: set member 3's [peers] entry to {moved}" \
            in told[0]
        await new3.barrier()
        assert new3.queue("q").storage.elements() == ["before"]  # type: ignore[attr-defined]
    finally:
        if new3 is not None:
            await new3.stop()
        for node in nodes.values():
            await node.stop()


@pytest.mark.parametrize("missing", [mesh.PREVOTE_FEATURE, mesh.VALUES_FEATURE,
                                     mesh.DEDUP_FEATURE, mesh.MESSAGES_FEATURE,
                                     mesh.GROUPS_FEATURE, mesh.REPLAY_TIME_FEATURE,
                                     mesh.HEADERS_FEATURE, mesh.LIMITS_FEATURE,
                                     mesh.QUEUE_OPTIONS_FEATURE, mesh.WORK_OPTIONS_FEATURE,
                                     mesh.TOPIC_OPTIONS_FEATURE, mesh.CLIENT_SESSIONS_FEATURE,
                                     mesh.SUBSCRIBER_DELETE_FEATURE,
                                     mesh.MEMBER_FORGET_FEATURE,
                                     mesh.CLIENT_EPHEMERAL_FEATURE,
                                     mesh.SESSION_KEPT_BYTES_FEATURE,
                                     mesh.SESSION_END_FEATURE,
                                     mesh.GROUP_RUN_SNAPSHOT_FEATURE,
                                     mesh.SESSION_REGISTER_FEATURE,
                                     mesh.RECEIPTS_TOTAL_FEATURE,
                                     mesh.CLIENT_REFUSALS_FEATURE, CLAIM_BYTES_FEATURE,
                                     KEPT_BY_OWNER_FEATURE, EXPIRE_LIMIT_FEATURE,
                                     GIVE_BACK_CHECKED_FEATURE,
                                     TAKE_ROOM_FEATURE, ENDED_BY_OWNER_FEATURE,
                                     SESSION_NONCE_FEATURE])
async def test_a_member_of_an_older_version_is_refused_at_the_handshake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    missing: str,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    peers = _peers(tmp_path, [1, 2])
    node = Node(1, data_dir=tmp_path / "1", peers=peers, secret=b"s", durability="none")
    older = Node(2, data_dir=tmp_path / "2", peers=peers, secret=b"s", durability="none")
    await node.start()
    with monkeypatch.context() as m:  # a member of a version that announces no pre-vote
        m.setattr(mesh, "REQUIRED_FEATURES", mesh.REQUIRED_FEATURES - {missing})
        await older.start()
    try:
        refusal = f"peer lacks required features ['{missing}']"
        for _ in range(500):
            if refusal in caplog.text:
                break
            await asyncio.sleep(0.01)
        assert refusal in caplog.text
        assert node.status()["connected"] == [] and older.status()["connected"] == []
        assert missing not in older.driver.network.mesh.config.features  # type: ignore[attr-defined]
    finally:
        await older.stop()
        await node.stop()


async def test_a_replaced_member_that_others_dial_is_told_why_they_refuse_it(
    tmp_path: Path,
) -> None:
    """Node 3 (the highest id: it only accepts links) restarted with a new data directory:
    its peers dial it and refuse it after authentication. It hears why from its probes,
    and they dial it with backoff, not every few milliseconds."""
    from lazily_queue.link_trouble import LinkTrouble

    peers = _peers(tmp_path, [1, 2, 3])
    nodes = [Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s", durability="none")
             for i in (1, 2, 3)]
    for node in nodes:
        await node.start()
    watch = LinkTrouble()
    transports_log = logging.getLogger("lazily_transports")
    replaced: Node | None = None
    try:
        await nodes[0].wait_for_leader(timeout=10)
        await nodes[2].barrier()
        await nodes[2].stop()
        transports_log.addHandler(watch)
        replaced = Node(3, data_dir=tmp_path / "3-new", peers=peers, secret=b"s",
                        durability="none")
        await replaced.start()
        async with asyncio.timeout(10):
            while "two processes share id 3" not in (  # noqa: ASYNC110 - polls the mesh
                    replaced.driver.network.mesh.trouble(1) or ""):  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)
        assert watch.fatal is not None and "share id 3" in watch.fatal
        assert "unique `id`" in watch.fatal
        await asyncio.sleep(2)
        refused = [node.driver.network.mesh.counters(3).refused  # type: ignore[attr-defined]
                   for node in nodes[:2]]
        assert 1 <= max(refused) <= 12, refused  # with backoff (no backoff: about 100)
        assert replaced.leader_id is None and replaced.view.queues == {}
    finally:
        transports_log.removeHandler(watch)
        if replaced is not None:
            await replaced.stop()
        for node in nodes[:2]:
            await node.stop()
