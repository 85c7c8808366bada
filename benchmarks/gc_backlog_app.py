"""The workload of ``benchmarks/gc_backlog.py``: an ``[app]`` entry run inside every node.

Every node times its full collections (a ``gc.callbacks`` entry ahead of the node's
own) and writes them (duration and wall-clock start), its term, state (and each change
of them, with the time) and RSS to ``stats-<id>.json`` each second.
Once the file ``go`` exists, the node leading then pushes ``backlog`` work items of
small dict payloads (``LANES`` in flight) and writes ``filled.json``; nothing consumes
them.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.memory_probe import rss_kb
from benchmarks.peers_common import spread
from lazily_queue.node import Node

LANES = 64


class Timer:
    """The duration of each full collection, in ms, and whether it traversed the objects
    spared from collections (``gc.unfreeze`` by :func:`~lazily_queue.allocator.freeze_survivors`
    at its start: none were spared at its end, before the node's callback spares them again)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.full: list[float] = []
        self.at: list[float] = []  # wall-clock start of each full collection
        self.thawed: list[int] = []

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.full.append(round((time.perf_counter() - self.started) * 1000, 1))
            self.at.append(round(time.time() - self.full[-1] / 1000, 3))
            if gc.get_freeze_count() == 0:
                self.thawed.append(len(self.full))


def _write(path: Path, doc: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(doc))
    partial.replace(path)


async def _fill(node: Node, root: Path, count: int) -> None:
    jobs = node.work_queue("backlog")
    counter = iter(range(count))
    began = time.monotonic()

    async def push() -> None:
        n = next(counter)
        await jobs.push({"n": n, "kind": "job", "tags": ["a", "b"]})

    await spread(count, push, LANES)
    _write(root / "filled.json", {"node": node.node_id, "seconds": time.monotonic() - began})


async def run(node: Node, options: dict[str, Any]) -> None:
    root = Path(options["root"])
    timer = Timer()
    gc.callbacks.insert(0, timer)
    stats = root / f"stats-{node.node_id}.json"
    filling: asyncio.Task[None] | None = None
    roles: list[tuple[float, int, str]] = []  # (wall clock, term, state) at each change
    while True:
        status = node.status()
        if not roles or roles[-1][1:] != (status["term"], status["state"]):
            roles.append((round(time.time(), 3), status["term"], status["state"]))
        if (filling is None and status["state"] == "leader" and (root / "go").exists()
                and not (root / "claimed").exists()):
            (root / "claimed").write_text(str(node.node_id))
            filling = asyncio.create_task(_fill(node, root, int(options["backlog"])))
        if filling is not None and filling.done() and filling.exception() is not None:
            _write(root / "filled.json", {"error": repr(filling.exception())})
        _write(stats, {"time": time.time(), "term": status["term"], "state": status["state"],
                       "rss_kb": rss_kb(), "full_ms": timer.full, "full_at": timer.at,
                       "thawed": timer.thawed, "roles": roles,
                       "frozen": gc.get_freeze_count()})
        await asyncio.sleep(1.0)
