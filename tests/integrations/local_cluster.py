"""Three-node in-process clusters (LocalHub) for the integration tests."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lazily_queue.node import Node
from lazily_queue.raft.engine import EngineConfig
from lazily_queue.raft.network import LocalHub

FAST = EngineConfig(election_timeout_min=0.15, election_timeout_max=0.3,
                    heartbeat_interval=0.03, leader_fallback_timeout=0.6)
IDS = (1, 2, 3)


def make_nodes(root: Path, *, durability: str = "none", **kwargs: object) -> list[Node]:
    """Three unstarted nodes linked through one LocalHub."""
    hub = LocalHub()
    return [
        Node(i, data_dir=root / str(i), peers={j: f"local:{j}" for j in IDS},
             network=hub.network(str(i)), durability=durability,  # type: ignore[arg-type]
             engine=FAST, **kwargs)  # type: ignore[arg-type]
        for i in IDS
    ]


async def wait_leader(nodes: list[Node], timeout: float = 10.0) -> Node:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node in nodes:
            if node.running and node.is_leader:
                return node
        await asyncio.sleep(0.01)
    raise AssertionError(f"no leader within {timeout}s")


async def settle(nodes: list[Node]) -> None:
    """Every node has applied everything committed so far."""
    for node in nodes:
        await node.barrier()
