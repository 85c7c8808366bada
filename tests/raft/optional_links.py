"""Three linked members of which node 3 runs a version without the optional link
features (goodbye, transfer notice): the tests of those features link to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from lazily_queue.node import Node
from lazily_queue.raft import mesh


async def until(predicate: Callable[[], object], what: str) -> None:
    """Poll ``predicate`` until it holds (15 s at most; ``what`` names it)."""
    async with asyncio.timeout(15):
        while not predicate():  # noqa: ASYNC110 - polls the nodes' state
            await asyncio.sleep(0.02)


@asynccontextmanager
async def three_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      ) -> AsyncIterator[dict[int, Node]]:
    """The three members, linked, node 1 leading; node 3 announces no optional feature."""
    peers = {i: f"unix://{tmp_path}/n{i}.sock" for i in (1, 2, 3)}
    made = {i: Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s",
                    durability="none") for i in (1, 2, 3)}
    try:
        for i, node in made.items():
            if i == 3:
                monkeypatch.setattr(mesh, "OPTIONAL_FEATURES", frozenset())
            await node.start()
            monkeypatch.undo()
        await made[1].wait_for_leader(timeout=10)
        await until(lambda: all(len(n.status()["connected"]) >= 2 for n in made.values()),
                    "every link up")
        yield made
    finally:
        for node in made.values():
            await node.stop(hand_over=False)
