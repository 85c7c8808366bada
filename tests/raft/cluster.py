"""An in-process cluster of real Nodes over a LocalHub, for tests."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from lazily_queue.node import Node
from lazily_queue.raft.engine import EngineConfig
from lazily_queue.raft.network import LocalHub

FAST = EngineConfig(election_timeout_min=0.15, election_timeout_max=0.3,
                    heartbeat_interval=0.03, leader_fallback_timeout=0.6)


class LocalCluster:
    def __init__(self, root: Path, size: int = 3, **node_kwargs: Any) -> None:
        self.root = root
        self.hub = LocalHub()
        self.ids = [str(i) for i in range(1, size + 1)]
        self.kwargs: dict[str, Any] = {"durability": "none", "engine": FAST, **node_kwargs}
        self.nodes: dict[str, Node] = {}

    def make(self, node_id: str, members: list[str] | None = None) -> Node:
        members = members or self.ids
        return Node(node_id, data_dir=self.root / node_id,
                    peers={m: f"local:{m}" for m in members},
                    network=self.hub.network(node_id), **self.kwargs)

    async def start(self) -> LocalCluster:
        for node_id in self.ids:
            await self.restart(node_id)
        await self.wait_leader()
        return self

    async def restart(self, node_id: str) -> Node:
        node = self.make(node_id)
        await node.start()
        self.nodes[node_id] = node
        return node

    async def stop(self, node_id: str) -> None:
        node = self.nodes.pop(node_id)
        await node.stop()

    async def close(self) -> None:
        for node_id in list(self.nodes):
            await self.stop(node_id)

    async def __aenter__(self) -> LocalCluster:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def wait_leader(self, timeout: float = 10.0, among: list[str] | None = None) -> Node:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node_id, node in self.nodes.items():
                if (among is None or node_id in among) and node.is_leader:
                    return node
            await asyncio.sleep(0.01)
        raise AssertionError(f"no leader within {timeout}s")

    async def leader(self) -> Node:
        return await self.wait_leader()

    async def followers(self) -> list[Node]:
        leader = await self.leader()
        return [n for n in self.nodes.values() if n is not leader]

    async def settle(self) -> None:
        """Every running node has applied everything committed so far."""
        for node in self.nodes.values():
            await node.barrier()
