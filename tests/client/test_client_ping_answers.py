"""A client reading through a member that cannot commit (its journal refuses writes, or
it is cut off from the majority): that member applies nothing the others commit, so the
client's mirror of it would stand still while the cluster goes on; its ping's answer
says so and the client moves to another member."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lazily_queue import ClientAccess, ClientGrant, Credentials, connect, testing
from tests.raft.faulty_disk import FaultyDisk

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-the-subscriber"


async def test_a_subscriber_leaves_a_member_whose_journal_refuses_writes(
    tmp_path: Path,
) -> None:
    disks = {n: FaultyDisk() for n in ("1", "2", "3")}
    prefix = "memory://ping-disk"

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("reader", TOKEN, produce=["*"], consume=["*"])
        return {"disk": disks[node_id],
                "clients": ClientAccess([grant], listen=f"{prefix}-{node_id}")}

    cluster = testing.cluster(3, data_dir=tmp_path, durability="fsync", disk_retry=0.05,
                              node_options=options)
    async with cluster:
        leader = await cluster.wait_for_leader()
        full = next(n for n in cluster.nodes.values() if n is not leader)
        others = [f"{prefix}-{n}" for n in cluster.nodes if n != full.node_id]
        async with connect([f"{prefix}-{full.node_id}", *others],
                           Credentials("reader", TOKEN), prefer_leader=False,
                           ping_interval=0.2, ping_timeout=5) as client:
            topic = client.topic("t")
            await topic.subscribe("audit")
            assert client.member == full.node_id
            disks[full.node_id].full = True
            await leader.topic("t").publish("while full")  # its copy on ``full`` fails
            async with asyncio.timeout(10):
                while full.status()["disk"]["writable"]:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            await leader.topic("t").publish("last")
            got = []
            async with asyncio.timeout(20):  # a hang detector: without a move, it waits
                async for value in topic.stream("audit"):
                    got.append(value)
                    if value == "last":
                        break
            assert got == ["while full", "last"]
            assert client.member != full.node_id
        disks[full.node_id].full = False


async def test_a_subscriber_leaves_a_member_cut_off_from_the_majority() -> None:
    prefix = "memory://ping-quorum"

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("reader", TOKEN, produce=["*"], consume=["*"])
        return {"clients": ClientAccess([grant], listen=f"{prefix}-{node_id}")}

    async with testing.cluster(3, node_options=options) as cluster:
        leader = await cluster.wait_for_leader()
        cut = next(n for n in cluster.nodes.values() if n is not leader)
        others = [f"{prefix}-{n}" for n in cluster.nodes if n != cut.node_id]
        async with connect([f"{prefix}-{cut.node_id}", *others],
                           Credentials("reader", TOKEN), prefer_leader=False,
                           ping_interval=0.2, ping_timeout=5) as client:
            topic = client.topic("t")
            await topic.subscribe("audit")
            assert client.member == cut.node_id
            cluster.isolate(cut.node_id)
            await leader.topic("t").publish("while cut off")
            got = []
            async with asyncio.timeout(20):  # a hang detector: without a move, it waits
                async for value in topic.stream("audit"):
                    got.append(value)
                    break
            assert got == ["while cut off"]
            assert client.member != cut.node_id
