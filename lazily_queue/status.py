"""A node's status as plain JSON-ready data, and its leadership history.

:func:`local_status` is :meth:`Node.status`: the replica's Raft state, the disk, and
the queues, topics and work queues as applied here. :func:`node_status` extends it
with a ``members`` list (role,
connection, match index and replication lag, which only the leader knows), the
summed depths of every queue family and, when a :class:`LeadershipClock` runs, when
this node last became leader and when it first committed an entry of that term.
The status page, ``/status.json`` and ``lazily-queue status`` all show this shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from typing import TYPE_CHECKING, Any

from .raft.errors import NodeNotRunning
from .replicated.view import ReadView

if TYPE_CHECKING:
    from .node import Node


class LeadershipClock:
    """Watches a node step by step and records, per term it led, two wall-clock times.

    ``became_leader`` is when it first saw itself leader; ``first_commit`` is when its
    commit index first reached an entry of its own term (the end of a failover, as
    writers see it). Times are ``time.time()`` seconds.
    """

    def __init__(self, node: Node) -> None:
        self.node = node
        self.terms: dict[int, dict[str, float | None]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._watch(), name="lazily-leadership-clock")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def observe(self) -> None:
        """Record the current state (called after every step)."""
        engine = self.node.driver.replica.engine
        if not engine.is_leader:
            return
        term = engine.term
        record = self.terms.get(term)
        if record is None:
            record = self.terms[term] = {"became_leader": time.time(), "first_commit": None}
        if record["first_commit"] is None:
            journal = self.node.driver.replica.journal
            if journal.term_at(engine.commit_index) == term:
                record["first_commit"] = time.time()

    def latest(self) -> dict[str, Any] | None:
        if not self.terms:
            return None
        term = max(self.terms)
        return {"term": term, **self.terms[term]}

    async def _watch(self) -> None:
        while self.node.running:
            try:
                await self.node.driver.next_step()
            except NodeNotRunning:
                return
            self.observe()


def local_status(node: Node) -> dict[str, Any]:
    """Raft and queue state as seen from ``node`` (a running node)."""
    driver = node.driver
    status = driver.replica.status()
    status["cluster"] = node.cluster
    status["durability"] = node.durability
    status["disk"] = {
        "writable": driver.disk_error is None,
        "error": driver.disk_error,
        "since": driver.disk_error_since,
    }
    status.update(state_status(node.view))
    mesh = getattr(driver.network, "mesh", None)
    if mesh is not None:
        status["listener"] = mesh.listener_stats()
    if node.clients is not None:
        status["clients"] = node.clients.stats()
    return status


def state_status(view: ReadView) -> dict[str, Any]:
    """The ``queues``, ``topics`` and ``work_queues`` sections of a status."""
    return {
        "queues": {
            name: {"len": q.len(), "closed": q.is_closed(), "capacity": q.capacity()}
            for name, q in sorted(view.queues.items())
        },
        "topics": {
            name: {
                "base_offset": t.base_offset(),
                "end_offset": t.end_offset(),
                "retained": t.end_offset() - t.base_offset(),
                "subscribers": {
                    sid: {**rec, "lag": t.end_offset() - rec["cursor"]}
                    for sid, rec in sorted(t.subscriptions().items())
                },
            }
            for name, t in sorted(view.topics.items())
        },
        "work_queues": {
            name: {
                "pending": w.core.pending_len(),
                "in_flight": w.core.in_flight_len(),
                "dead_letters": w.core.dead_letter_len(),
                "workers": {
                    worker: len(ds) for worker, ds in sorted(w.core.in_flight_by_worker().items())
                },
            }
            for name, w in sorted(view.work_queues.items())
        },
    }


def node_status(node: Node, clock: LeadershipClock | None = None) -> dict[str, Any]:
    """This node's view of the cluster and its queues (see the module docstring)."""
    status = node.status()
    leader = status["leader"]
    is_leader = status["state"] == "leader"
    connected = set(status["connected"])
    match = status["match_index"] if is_leader else {}
    members = []
    for member in status["members"]:
        entry: dict[str, Any] = {
            "id": member,
            "role": "leader" if member == leader else "follower",
            "self": member == status["node"],
            "connected": member == status["node"] or member in connected,
            "match_index": None,
            "lag": None,
        }
        if member == status["node"]:
            entry["match_index"] = status["log_last_index"]
            entry["lag"] = max(0, status["commit_index"] - status["last_applied"])
        elif member in match:
            entry["match_index"] = match[member]
            entry["lag"] = max(0, status["log_last_index"] - match[member])
        members.append(entry)
    status["members"] = members
    status["totals"] = {
        "queued": sum(q["len"] for q in status["queues"].values()),
        "pending": sum(w["pending"] for w in status["work_queues"].values()),
        "in_flight": sum(w["in_flight"] for w in status["work_queues"].values()),
        "dead_letters": sum(w["dead_letters"] for w in status["work_queues"].values()),
        "topic_lag": max(
            (s["lag"] for t in status["topics"].values() for s in t["subscribers"].values()),
            default=0,
        ),
    }
    status["leadership"] = clock.latest() if clock is not None else None
    status["time"] = time.time()
    plain: dict[str, Any] = _plain(status)
    return plain


def _plain(value: Any) -> Any:
    """Enums and other scalars as JSON types; dict keys as strings."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
