"""Nodes over real authenticated Unix-socket links (the default network)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node


def _peers(tmp: Path, ids: list[int]) -> dict[int, str]:
    return {i: f"unix://{tmp}/n{i}.sock" for i in ids}


async def test_cluster_over_unix_sockets_and_a_wrong_secret_cannot_join(tmp_path: Path) -> None:
    peers = _peers(tmp_path, [1, 2, 3, 4])
    nodes = [Node(i, data_dir=tmp_path / str(i), peers={k: v for k, v in peers.items() if k != 4},
                  listen=peers[i], secret=b"right", durability="none") for i in (1, 2, 3)]
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
        await asyncio.sleep(0.5)
        assert intruder.status()["connected"] == []
        assert intruder.leader_id is None
        assert intruder.driver.replica.sm.queues == {}
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
