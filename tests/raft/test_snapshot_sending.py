"""A snapshot reaches a lagging follower however large it is: the leader hands out only
as many chunks per step as the member's window and link take (a chunk a link drops
would leave the follower a hole), the transmission keeps the snapshot it started with
when a newer one is taken, and a round with no chunk to send ends at once (the clock
stands still within a step)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.engine import EngineConfig
from lazily_queue.raft.proposals import ReplicaConfig
from lazily_queue.raft.snapshot import SnapshotStore, decode_snapshot
from lazily_queue.replicated import ops as C

from .harness import Manual

CHUNK = 1024


def _store(path: Path, state: list[Any]) -> SnapshotStore:
    store = SnapshotStore(OsDisk(sync=False), str(path), capture=lambda: {"items": list(state)},
                          install=lambda _: None, prepare=lambda _: None, chunk_size=CHUNK)
    return store


def _take(store: SnapshotStore, index: int) -> None:
    store.serialize((None, (b"b", index + 1, 1), (b"a", index, 1), ["1"]), index + 1)
    store.checkSerializing()


def test_chunks_go_only_while_the_window_and_the_link_have_room(tmp_path: Path) -> None:
    store = _store(tmp_path / "s", [b"x" * 10_000])
    _take(store, 5)
    queued = {"f": 0}
    room = {"f": True}
    store.window_bytes = 3 * CHUNK
    store.queued = lambda node: queued[node]
    store.link_ready = lambda node: room[node]
    handed = []
    for _ in range(100):
        data = store.getTransmissionData("f")
        if data is None:
            break
        handed.append(data)
        queued["f"] += 1
    assert len(handed) == 3 and handed[0][1] and not handed[-1][2]
    assert store.transmitting
    queued["f"] = 0  # the step's messages left
    room["f"] = False  # but the link's buffer is full
    assert store.getTransmissionData("f") is None
    room["f"] = True
    for _ in range(100):
        data = store.getTransmissionData("f")
        assert data is not None  # the window is empty after every chunk here
        handed.append(data)
        if data[2]:
            break
    assert handed[-1][2] and not store.transmitting
    assert sum(not first for _, first, _ in handed) == len(handed) - 1  # one start only
    assert b"".join(chunk for chunk, _, _ in handed) == store._raw()


def test_a_snapshot_taken_meanwhile_does_not_restart_a_transmission(tmp_path: Path) -> None:
    state = [b"old" * 2000]
    store = _store(tmp_path / "s", state)
    _take(store, 5)
    first = store._raw()
    assert first is not None
    chunks = []
    for _ in range(2):
        data = store.getTransmissionData("f")
        assert data is not None
        chunks.append(data)
    state[:] = [b"new" * 3000]
    _take(store, 9)
    assert store._raw() != first
    while True:
        data = store.getTransmissionData("f")
        assert data is not None
        chunks.append(data)
        if data[2]:
            break
    sent = b"".join(chunk for chunk, _, _ in chunks)
    assert sent == first and decode_snapshot(sent)["last"][1] == 6
    fresh = store.getTransmissionData("g")  # a new transmission takes the newest
    newest = store._raw()
    assert fresh is not None and fresh[1] and newest is not None
    assert newest.startswith(fresh[0])


def _lagging_cluster(root: Path) -> tuple[Manual, str, str]:
    engine = EngineConfig(compaction_min_entries=4, compaction_min_time=0.001,
                          snapshot_chunk_bytes=CHUNK)
    cluster = Manual(root, config=ReplicaConfig(engine=engine))
    leader = cluster.elect()
    cluster.declare_queue(leader)
    lagging = next(n for n in cluster.ids if n != leader)
    cluster.replicas[leader].peer_connected(lagging, False)
    cluster.replicas[lagging].peer_connected(leader, False)

    def cut(message: tuple[str, str, Any]) -> bool:
        return lagging in message[:2]

    for i in range(40):
        cluster.propose(leader, C.QUEUE_PUSH, ["q", bytes([i]) * 500])
        for _ in range(3):
            cluster.round(keep=cut)
        cluster.in_flight = [m for m in cluster.in_flight if not cut(m)]
    replica = cluster.replicas[leader]
    assert replica.journal.first_index > cluster.replicas[lagging].journal.last_index + 1
    return cluster, leader, lagging


def test_a_round_with_no_room_ends_at_once_and_the_follower_catches_up_later(
    tmp_path: Path,
) -> None:
    cluster, leader, lagging = _lagging_cluster(tmp_path)
    replica = cluster.replicas[leader]
    replica.snapshots.link_ready = lambda node: False
    cluster.replicas[leader].peer_connected(lagging, True)
    cluster.replicas[lagging].peer_connected(leader, True)
    cluster.sent.clear()
    for _ in range(6):  # each step returns: the clock stands still within a step
        cluster.now += 0.05
        cluster.round()
    assert cluster.replicas[lagging].snapshots.installed == 0
    to_lagging = [m for src, dst, m in cluster.sent if dst == lagging and "serialized" in m]
    assert to_lagging and all(m["serialized"] is None for m in to_lagging)
    assert len(to_lagging) <= 6  # one message a round, not one per call until time passes
    replica.snapshots.link_ready = lambda node: True
    replica.snapshots.window_bytes = 4 * CHUNK
    cluster.sent.clear()
    per_step: list[int] = []
    for _ in range(200):
        cluster.now += 0.001
        before = len(cluster.in_flight)
        cluster.step(leader)
        per_step.append(sum(1 for src, dst, m in cluster.in_flight[before:]
                            if dst == lagging and m.get("serialized")))
        cluster.step_all()
        cluster.deliver()
        if cluster.replicas[lagging].snapshots.installed:
            break
    assert cluster.replicas[lagging].snapshots.installed == 1
    window = replica.snapshots.window_bytes // CHUNK
    assert max(per_step) <= window and sum(per_step) > window  # paced over several steps
    cluster.propose(leader, C.QUEUE_PUSH, ["q", b"after"])
    for _ in range(10):
        cluster.round()
    assert cluster.views[lagging].queues["q"].len() == 41


async def test_a_lagging_member_installs_a_large_snapshot_over_unix_socket_links(
    tmp_path: Path,
) -> None:
    """About 10 MiB of snapshot against a 1 MiB send buffer: without pacing most chunks
    were dropped and the member never caught up."""
    peers: dict[int | str, str] = {i: f"unix://{tmp_path}/n{i}.sock" for i in (1, 2, 3)}
    engine = replace(testing.FAST_ENGINE, compaction_min_entries=8, compaction_min_time=0.01)

    def member(i: int) -> Node:
        return Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s",
                    durability="none", engine=engine)

    nodes = {i: member(i) for i in (1, 2, 3)}
    for node in nodes.values():
        await node.start()
    try:
        await nodes[1].wait_for_leader(timeout=10)
        leader = next(n for n in nodes.values() if n.is_leader)
        lagging = next(i for i, n in nodes.items() if not n.is_leader)
        gone = nodes[lagging].status()["log_last_index"]
        await nodes[lagging].stop()
        blob = 1024 * 1024 - 64
        for i in range(10):
            await leader.queue("b").push((i, bytes([i]) * blob))
        async with asyncio.timeout(60):  # hang detectors, not timing assertions
            while leader.status()["log_first_index"] <= gone + 1:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            nodes[lagging] = member(lagging)
            await nodes[lagging].start()
            while nodes[lagging].status()["snapshots_installed"] < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            await nodes[lagging].barrier()
        elements = nodes[lagging].queue("b").storage.elements()  # type: ignore[attr-defined]
        assert [e[0] for e in elements] == list(range(10))
        assert elements[9] == (9, bytes([9]) * blob)
    finally:
        for node in nodes.values():
            await node.stop()
