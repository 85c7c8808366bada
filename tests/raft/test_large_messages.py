"""Messages up to ``max_message_bytes`` (1 MiB by default) on a cluster: replicated as
ordinary entries (never PySyncObj's chunked path), through snapshots, over real links;
a larger message is refused at the call, and peers refuse frames over their limit."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import cbor2
import pytest

from lazily_queue import MessageTooLarge, testing
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from lazily_queue.raft.codec import FrameError, decode_frame
from lazily_queue.raft.engine import MAX_COMMAND_BYTES

MiB = 1024 * 1024


async def _until(predicate: object, node: Node, what: str) -> None:
    async with asyncio.timeout(30):  # a hang detector, not a timing assertion
        while not predicate():  # type: ignore[operator]
            await node.driver.next_step()


async def test_a_1_mib_message_crosses_a_cluster_and_a_snapshot(tmp_path: Path) -> None:
    engine = replace(testing.FAST_ENGINE, compaction_min_entries=8, compaction_min_time=0.01)
    async with testing.cluster(3, data_dir=tmp_path, engine=engine) as c:
        leader = await c.leader()
        producer, lagging = await c.followers()
        q = producer.queue("blobs")
        largest = b"x" * MiB  # exactly the limit
        await q.push(largest)
        with pytest.raises(MessageTooLarge) as info:
            await q.push(b"x" * (MiB + 1))
        assert (info.value.size, info.value.limit) == (MiB + 1, MiB)
        assert "a message of 1048577 bytes exceeds the 1048576-byte limit" in str(info.value)
        text = "\u00e9" * (MiB // 2)  # 1 MiB of UTF-8
        await q.push(text)
        with pytest.raises(MessageTooLarge, match="1048578 bytes"):
            await q.push(text + "e" + "e")
        gone = lagging.status()["log_last_index"]
        await c.kill(lagging.node_id)
        for i in range(12):  # enough entries for the leader to compact its log
            await q.push((i, b"y" * (MiB - 64)))
        await c.settle()
        # Snapshots are written on a worker thread: wait until the leader's log no longer
        # holds what the lagging member lacks, so it can only catch up from a snapshot.
        await _until(lambda: leader.status()["log_first_index"] > gone + 1, leader,
                     "the leader's compaction")
        assert leader.status()["snapshots_taken"] >= 1
        before = lagging.view.capture()["queues"].get("blobs")
        rejoined = await c.restart(lagging.node_id)
        await _until(lambda: rejoined.status()["snapshots_installed"] >= 1, rejoined,
                     "the snapshot install")
        await rejoined.barrier()
        elements = rejoined.queue("blobs").storage.elements()  # type: ignore[attr-defined]
        assert before != elements and len(elements) == 14
        assert elements[0] == largest and elements[1] == text
        assert elements[2] == (0, b"y" * (MiB - 64)) and type(elements[2]) is tuple
        assert await rejoined.queue("blobs").pop() == largest
        assert await q.pop() == text


async def test_the_limit_is_configurable_per_cluster(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path, max_message_bytes=2 * MiB) as c:
        topic = c.node(1).topic("t")
        await topic.subscribe("s")
        await topic.publish(b"z" * 2 * MiB)
        assert await topic.poll("s") == b"z" * 2 * MiB
        with pytest.raises(MessageTooLarge, match="2097152-byte limit"):
            await c.node(1).work_queue("w").push(b"z" * (2 * MiB + 1))
    with pytest.raises(InvalidConfiguration, match="from 1024 to 4194304"):
        Node(1, data_dir=None, durability="none", max_message_bytes=5 * MiB)


async def test_a_1_mib_message_over_unix_socket_links(tmp_path: Path) -> None:
    peers = {i: f"unix://{tmp_path}/n{i}.sock" for i in (1, 2, 3)}
    nodes = [Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s",
                  durability="none") for i in (1, 2, 3)]
    for node in nodes:
        await node.start()
    try:
        await nodes[0].wait_for_leader(timeout=10)
        follower = next(n for n in nodes if not n.is_leader)
        blob = bytes(range(256)) * (MiB // 256)
        await follower.queue("q").push(blob)
        for node in nodes:
            await node.barrier()
            assert node.queue("q").storage.elements() == [blob]  # type: ignore[attr-defined]
    finally:
        for node in nodes:
            await node.stop()


def test_peers_refuse_frames_over_their_limit() -> None:
    async def one_node() -> int:
        async with testing.cluster(1) as c:
            return c.node(1).driver.replica.max_frame_bytes

    limit = asyncio.run(one_node())
    assert limit >= 2 * MAX_COMMAND_BYTES  # an append of entries plus the largest entry
    message = {"type": "apply_command", "command": b"x" * (limit - 64)}
    assert decode_frame(cbor2.dumps([message]), limit)[0]["command"] == message["command"]
    over = cbor2.dumps([{"type": "apply_command", "command": b"x" * (limit + 2048)}])
    with pytest.raises(FrameError, match=f"exceeds {limit}"):
        decode_frame(over, limit)


async def test_a_frame_over_the_limit_closes_the_link_only() -> None:
    async with testing.cluster(2) as c:
        node = c.node(1)
        driver = node.driver
        closed: list[tuple[str, str]] = []
        driver.network.close_peer = lambda peer, why: closed.append((peer, why))  # type: ignore[method-assign]
        big = cbor2.dumps([{"type": "apply_command",
                            "command": b"x" * (driver.replica.max_frame_bytes + 2048)}])
        bad = driver.bad_frames
        driver._on_frame("2", big)
        assert driver.bad_frames == bad + 1
        assert closed and closed[0][0] == "2" and "exceeds" in closed[0][1]
        await node.queue("q").push("still serving")


async def test_a_members_message_holds_one_container_per_16_bytes_of_the_limit() -> None:
    """A web app that pushes what it was posted: a megabyte of empty lists would hold its
    member's event loop for a second (its leadership lost on the way); refused at the
    call instead, before anything is encoded or proposed."""
    async with testing.cluster(1) as c:
        node = await c.leader()
        most = MiB // 16
        pushes = (node.queue("q").push, node.topic("t").publish, node.work_queue("w").push)
        for push in pushes:
            await push(0)  # declared
        proposed = node.driver.replica.proposals
        for push in pushes:
            with pytest.raises(MessageTooLarge, match=f"more than {most} lists, tuples, dicts "
                               "and sets .* flatten the value or encode it"):
                await push([[] for _ in range(most)])  # and the value itself: one more
        with pytest.raises(MessageTooLarge, match="more than 65536 lists"):
            await node.queue("q").push_many([1, {"k": [[0]] * MiB}])
        with pytest.raises(MessageTooLarge, match="more than 65536 lists"):
            async with node.transaction() as tx:  # a transaction's ops count together
                tx.push(node.queue("q"), [[] for _ in range(most // 2)])
                tx.publish(node.topic("t"), [[] for _ in range(most // 2)])
        assert node.driver.replica.proposals == proposed  # nothing was proposed
        q = node.queue("q")
        await q.push([[] for _ in range(most - 1)])  # at the bound: replicated as any
        await q.push({"rows": [{"id": n} for n in range(most - 2)]})
        taken = [await q.pop() for _ in range(3)]
        assert taken[0] == 0 and len(taken[1]) == most - 1 and len(taken[2]["rows"]) == most - 2


async def test_a_members_message_counts_decimals_uuids_dates_and_datetimes_as_containers(
) -> None:
    """Each is written with a tag and built by a hook on every replica: a megabyte of
    decimals (4 bytes each) held a member's loop for two seconds."""
    async with testing.cluster(1) as c:
        node = await c.leader()
        most = MiB // 16
        q = node.queue("q")
        when = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
        for scalar in (Decimal("1.5"), uuid.UUID(int=5), datetime.date(2020, 1, 1), when):
            with pytest.raises(MessageTooLarge, match=f"more than {most} lists, tuples, "
                               "dicts and sets \\(decimals, UUIDs, dates and datetimes"):
                await q.push([scalar] * most)  # and the list holding them: one more
        await q.push([Decimal("1.5")] * (most - 1))
        assert len(await q.pop()) == most - 1
