"""The ``raft1`` and ``raft3`` backends: fixtures replayed on real in-process clusters.

Each replay starts a fresh cluster (one node, or three linked by a ``LocalHub``) and
opens the model under a fresh name. Ops are issued on the *observer* node (a follower
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
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Mapping
from typing import Any

from ..core.queue import QueuePushError
from ..node import Node
from ..raft.engine import EngineConfig
from ..raft.network import LocalHub
from ..reactive import Context
from ..storage.raft_collections import RaftTopicStorage, RaftWorkQueueStorage
from ..storage.raft_queue import RaftQueueStorage
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
from .local import (
    Invoker,
    LocalQueueAdapter,
    LocalTopicAdapter,
    LocalWorkQueueAdapter,
    _topic_snapshot,
)

FAST = EngineConfig(
    election_timeout_min=0.1, election_timeout_max=0.2, heartbeat_interval=0.02,
    leader_fallback_timeout=0.5,
)
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


class RaftBackend(Backend):
    """A fresh cluster of ``size`` real nodes per replay."""

    flavors = ("async",)

    def __init__(self, size: int) -> None:
        self.size = size
        self.ids = [str(i) for i in range(1, size + 1)]
        self.hub = LocalHub()
        self.nodes: dict[str, Node] = {}
        self.stopped: set[str] = set()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._observer = "1"

    async def start(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lazily-conformance-")
        for node_id in self.ids:
            self.nodes[node_id] = Node(
                node_id,
                data_dir=f"{self._tmp.name}/{node_id}",
                peers={n: f"local:{n}" for n in self.ids},
                network=self.hub.network(node_id),
                durability="none",
                engine=FAST,
                maintenance_interval=None,
                context=Context(name=f"conformance-node{node_id}"),
                tick_interval=0.01,
            )
        await asyncio.gather(*(n.start() for n in self.nodes.values()))
        leader = await self._wait_leader()
        self._observer = next((n for n in self.ids if n != leader), leader)

    async def stop(self) -> None:
        await asyncio.gather(*(n.stop() for n in self.nodes.values()),
                             return_exceptions=True)
        self.nodes.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    @property
    def observer(self) -> Node:
        return self.nodes[self._observer]

    async def _wait_leader(self, among: set[str] | None = None, timeout: float = 10.0) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            for key, node in self.nodes.items():
                if (among is None or key in among) and key not in self.stopped and node.is_leader:
                    return key
            await asyncio.sleep(0.005)
        raise TimeoutError(f"no leader within {timeout}s among {sorted(among or self.nodes)}")

    # -- models -----------------------------------------------------------------------------

    async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter:
        cell = self.observer.queue(f"q{next(_names)}", capacity=initial.capacity)
        for value in initial.elements:
            if await cell.offer(value) is not None:
                raise ValueError(f"cannot seed {value!r} into the queue")
        if initial.closed:
            await cell.close()
        return RaftQueueAdapter(cell, Invoker("async"))

    async def topic(self, initial: TopicInitial, flavor: str) -> TopicAdapter:
        cell = self.observer.topic(f"t{next(_names)}")
        storage = cell.storage
        assert isinstance(storage, RaftTopicStorage)
        await storage.restore(_topic_snapshot(initial))
        return LocalTopicAdapter(cell, Invoker("async"))

    async def restart(self, adapter: TopicAdapter) -> TopicAdapter:
        await self.cluster_op({"type": "restart_cluster"})
        return adapter

    async def work_queue(self, initial: WorkQueueInitial, flavor: str) -> WorkQueueAdapter:
        cell = self.observer.open_work_queue(
            f"w{next(_names)}", initial.visibility_timeout, initial.max_deliveries
        )
        storage = cell.storage
        assert isinstance(storage, RaftWorkQueueStorage)
        await storage.declare()
        return LocalWorkQueueAdapter(cell, Invoker("async"))

    # -- cluster ops ----------------------------------------------------------------------------

    async def cluster_op(self, op: Mapping[str, Any]) -> None:
        kind = op.get("type")
        running = {k for k in self.nodes if k not in self.stopped}
        if kind == "kill_leader":
            leader = await self._wait_leader()
            if leader == self._observer:
                await self.nodes[leader].transfer_leadership()
                leader = await self._wait_leader(among=running - {leader})
            await self._stop(leader)
            await self._wait_leader(among=running - {leader})
        elif kind == "kill_follower":
            leader = await self._wait_leader()
            victim = sorted(running - {leader, self._observer})[0]
            await self._stop(victim)
        elif kind == "restart":
            for key in sorted(self.stopped):
                await self.nodes[key].start()
            self.stopped.clear()
            await self._wait_leader()
        elif kind == "restart_cluster":
            for key in running:
                await self._stop(key)
            for key in self.nodes:
                await self.nodes[key].start()
            self.stopped.clear()
            await self._wait_leader()
            await self.observer.barrier()
        elif kind == "partition":
            if "groups" in op:
                self.hub.partition(*[{str(k) for k in g} for g in op["groups"]])
            else:
                target = op.get("isolate", "leader")
                if target == "leader":
                    key = await self._wait_leader()
                elif target == "observer":
                    key = self._observer
                else:
                    key = str(target)
                self.hub.partition({key}, set(self.ids) - {key})
        elif kind == "heal":
            self.hub.heal()
            await self._wait_leader()
            await self.observer.barrier()
        else:
            raise UnsupportedFixtureOp(f"unknown cluster op {kind!r}")

    async def _stop(self, key: str) -> None:
        await self.nodes[key].stop()
        self.stopped.add(key)


register_backend("raft1", lambda: RaftBackend(1))
register_backend("raft3", lambda: RaftBackend(3))
