"""The ``raft1`` and ``raft3`` backends: fixtures replayed on real in-process clusters.

Each replay starts a fresh :class:`~lazily_queue.testing.Cluster` (one node, or three
linked in memory; a reactive context of its own per node) and opens the model under a
fresh name. Ops are issued on the *observer* node (a follower
in ``raft3``, so every op is forwarded to the leader and committed by a majority) and
return once applied there; the probes watch the observer's readers, which change only
when committed entries apply. Only the ``async`` flavor exists: the Raft storages do
not declare the ``sync`` capability, so the cells' ``try_*`` methods refuse with
``UnsupportedOperation``.

Topic ``restart`` stops every node and starts them again from their journals (the
observer's cells survive the restart and are re-bound). Distributed fixtures may use
cluster ops:

- ``kill_leader``: stop the leader (if the observer leads, it first hands leadership
  away) and wait for a new one among the others;
- ``kill_follower``: stop a follower other than the observer;
- ``restart``: start every stopped node again; ``restart_cluster``: stop and start all;
- ``partition`` with ``isolate`` = ``"leader"``, ``"observer"`` or a node id, or
  ``groups`` (lists of ids);
  ``heal``: restore every link.

Work-queue fixtures with a ``promote_due`` op are skipped (``lacks promote_at``): a
replicated work queue promotes delayed items only at the leader's stamp.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

from ..core.queue import QueuePushError
from ..core.scheduling import RetryPolicy
from ..node import Node
from ..node_cells import NodeCells
from ..reactive import Context
from ..storage.raft_queue import RaftQueueStorage
from ..storage.raft_topic import RaftTopicStorage
from ..storage.raft_work_queue import RaftWorkQueueStorage
from ..testing import Cluster, NodeOptions
from .backend import (
    Backend,
    QueueAdapter,
    QueueInitial,
    TopicAdapter,
    TopicInitial,
    UnsupportedFixtureOp,
    WorkQueueAdapter,
    WorkQueueInitial,
    register_backend,
)
from .local import _topic_snapshot
from .local_adapters import Invoker, LocalQueueAdapter, LocalTopicAdapter, LocalWorkQueueAdapter

_names = itertools.count(1)


class RaftQueueAdapter(LocalQueueAdapter):
    """The local adapter's async flavor, with the replicated storage's snapshot and a
    batch proposed in one loop iteration (one replicated batch, one apply wave)."""

    def elements(self) -> list[Any]:
        storage = self.cell.storage
        assert isinstance(storage, RaftQueueStorage)
        return storage.elements()

    async def push_batch(self, values: list[Any]) -> list[QueuePushError | None]:
        return list(await asyncio.gather(*(self.cell.offer(v) for v in values)))


def _own_context(node_id: str) -> NodeOptions:
    return {"context": Context(name=f"conformance-node{node_id}")}


class RaftBackend(Backend):
    """A fresh :class:`~lazily_queue.testing.Cluster` of ``size`` real nodes per replay."""

    flavors = ("async",)
    cluster_ops = frozenset(
        {"kill_leader", "kill_follower", "restart", "restart_cluster", "partition", "heal"})
    lacks = {"promote_at": "a replicated work queue promotes delayed items at the leader's "
                           "stamp only (WORK_PROMOTE carries no time; no client proposes it)"}

    def __init__(self, size: int) -> None:
        self.size = size
        self.cluster: Cluster | None = None
        self._observer = "1"

    def node_options(self, node_id: str) -> NodeOptions:
        """The options of each node of the cluster."""
        return {**_own_context(node_id), "wall_clock": self.clock}

    async def start(self) -> None:
        self.cluster = Cluster(self.size, maintenance_interval=None, tick_interval=0.01,
                               node_options=self.node_options)
        try:
            await self.cluster.start()
        except BaseException:
            await self.stop()
            raise
        leader = await self._wait_leader()
        self._observer = next((n for n in self.cluster.ids if n != leader), leader)

    async def stop(self) -> None:
        if self.cluster is not None:
            await self.cluster.close()
            self.cluster = None

    @property
    def _cluster(self) -> Cluster:
        if self.cluster is None:
            raise RuntimeError("the raft backend is not started")
        return self.cluster

    @property
    def observer(self) -> Node:
        return self._cluster.node(self._observer)

    @property
    def cells(self) -> NodeCells:
        """Where the models' cells are opened: the observer's."""
        return self.observer

    async def _wait_leader(self, among: set[str] | None = None) -> str:
        return (await self._cluster.wait_for_leader(among=among)).node_id

    # -- models -----------------------------------------------------------------------------

    async def opened(self, kind: str, name: str) -> None:
        """The ``kind`` object ``name`` of a model is made, before the fixture's steps."""

    async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter:
        cell = self.cells.queue(f"q{next(_names)}", capacity=initial.capacity,
                                ttl=initial.ttl, limits=initial.limits)
        for value in initial.elements:
            if await cell.offer(value) is not None:
                raise ValueError(f"cannot seed {value!r} into the queue")
        if initial.closed:
            await cell.close()
        await self.opened("queue", cell.name)
        return RaftQueueAdapter(cell, Invoker("async"), self.cells.transaction)

    async def topic(self, initial: TopicInitial, flavor: str) -> TopicAdapter:
        cell = self.cells.topic(f"t{next(_names)}", max_age=initial.max_age,
                                limits=initial.limits)
        storage = cell.storage
        assert isinstance(storage, RaftTopicStorage)
        await storage.restore(_topic_snapshot(initial))
        await self.opened("topic", cell.name)
        return LocalTopicAdapter(cell, Invoker("async"), self.cells.transaction,
                                 lease_unit=0.001)

    async def restart(self, adapter: TopicAdapter) -> TopicAdapter:
        await self.cluster_op({"type": "restart_cluster"})
        return adapter

    async def work_queue(self, initial: WorkQueueInitial, flavor: str) -> WorkQueueAdapter:
        retry = None if initial.retry is None else RetryPolicy.from_list(initial.retry)
        cell = self.cells.open_work_queue(
            f"w{next(_names)}", initial.visibility_timeout, initial.max_deliveries, retry=retry,
            limits=initial.limits,
        )
        storage = cell.storage
        assert isinstance(storage, RaftWorkQueueStorage)
        await storage.declare()
        await self.opened("work_queue", cell.name)
        return LocalWorkQueueAdapter(cell, Invoker("async"), self.cells.transaction,
                                     time_scale=0.001)

    # -- cluster ops ----------------------------------------------------------------------------

    async def cluster_op(self, op: Mapping[str, Any]) -> None:
        kind = op.get("type")
        cluster = self._cluster
        running = {node.node_id for node in cluster.running}
        if kind == "kill_leader":
            leader = await self._wait_leader()
            if leader == self._observer:
                await cluster.node(leader).transfer_leadership()
                leader = await self._wait_leader(among=running - {leader})
            await cluster.kill(leader)
            await self._wait_leader(among=running - {leader})
        elif kind == "kill_follower":
            leader = await self._wait_leader()
            victim = sorted(running - {leader, self._observer})[0]
            await cluster.kill(victim)
        elif kind == "restart":
            for key in sorted(set(cluster.ids) - running):
                await cluster.restart(key)
            await self._wait_leader()
        elif kind == "restart_cluster":
            for key in running:
                await cluster.kill(key)
            for key in cluster.ids:
                await cluster.restart(key)
            await self._wait_leader()
            await self.observer.barrier()
        elif kind == "partition":
            if "groups" in op:
                cluster.partition(*op["groups"])
            else:
                target = op.get("isolate", "leader")
                if target == "leader":
                    key = await self._wait_leader()
                elif target == "observer":
                    key = self._observer
                else:
                    key = str(target)
                cluster.partition([key], set(cluster.ids) - {key})
        elif kind == "heal":
            cluster.heal()
            await self._wait_leader()
            await self.observer.barrier()
        else:
            raise UnsupportedFixtureOp(f"unknown cluster op {kind!r}")


register_backend("raft1", lambda: RaftBackend(1))
register_backend("raft3", lambda: RaftBackend(3))
