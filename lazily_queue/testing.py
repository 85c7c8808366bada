"""In-process clusters for testing applications built on lazily-queue.

One call gives real :class:`~lazily_queue.node.Node` members linked in memory (no
sockets, no secret), with fast Raft timeouts, ``durability="none"`` and a temporary
data directory::

    from lazily_queue import testing

    async def test_an_order_survives_the_leader() -> None:
        async with testing.cluster(3) as c:
            orders = (await c.followers())[0].queue("orders")
            await orders.push("o-1")
            await c.kill((await c.leader()).node_id)
            await c.wait_for_leader()
            assert await orders.pop() == "o-1"

Members are killed, restarted from their data directory, cut off from each other and
healed by id; :meth:`Cluster.settle` returns once every running member has applied
everything committed so far. Members are named ``"1"`` to ``"N"``; every method that
takes an id also takes the number.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import TypedDict, Unpack

from .clean_stop import say_goodbye
from .client.access import ClientAccess
from .core.dedup import DedupLimits
from .errors import InvalidConfiguration
from .member_checks import id_problem
from .node import Durability, Node
from .raft.disk import Disk
from .raft.engine import EngineConfig
from .raft.errors import NodeNotRunning
from .raft.network import LocalHub
from .reactive import Context

__all__ = ["FAST_ENGINE", "Cluster", "NodeOptions", "cluster"]

#: Raft timing for tests: elections in 150-300 ms, heartbeats every 30 ms.
FAST_ENGINE = EngineConfig(
    election_timeout_min=0.15,
    election_timeout_max=0.3,
    heartbeat_interval=0.03,
    leader_fallback_timeout=0.6,
)


class NodeOptions(TypedDict, total=False):
    """:class:`~lazily_queue.node.Node` settings a test cluster passes through."""

    cluster: str
    context: Context
    op_timeout: float
    tick_interval: float
    seed: int
    maintenance_interval: float | None
    topic_gc_interval: float
    disk: Disk
    disk_retry: float
    clients: ClientAccess
    max_message_bytes: int
    max_objects: int
    max_subscribers: int
    dedup: DedupLimits
    wall_clock: Callable[[], float]


class Cluster:
    """``size`` real nodes over one :class:`~lazily_queue.raft.network.LocalHub`.

    Built unstarted (its nodes exist, so an application can be wired to them first);
    ``async with`` (or :meth:`start`) starts every member and waits for a leader,
    leaving it (or :meth:`close`) stops them and removes a temporary data directory.
    """

    def __init__(
        self,
        size: int = 3,
        *,
        data_dir: str | Path | None = None,
        durability: Durability = "none",
        engine: EngineConfig = FAST_ENGINE,
        node_options: Callable[[str], NodeOptions] | None = None,
        **options: Unpack[NodeOptions],
    ) -> None:
        """``data_dir`` holds one directory per member (default: a temporary one);
        ``options`` go to every node, ``node_options(id)`` to one (its own disk or
        reactive context)."""
        if size < 1:
            raise InvalidConfiguration(f"a cluster needs at least one node, not {size}")
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._closed = False
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(
                prefix="lazily-testing-", ignore_cleanup_errors=True
            )
            data_dir = self._tmp.name
        self.root = Path(data_dir)
        self.hub = LocalHub()
        self._durability: Durability = durability
        self._engine = engine
        self._options = options
        self._node_options = node_options
        self._members = [str(i) for i in range(1, size + 1)]
        self._nodes = {node_id: self._make(node_id) for node_id in self._members}

    def __repr__(self) -> str:
        running = [n.node_id for n in self.running]
        return f"Cluster(members={self._members}, running={running}, root={str(self.root)!r})"

    def _make(self, node_id: str) -> Node:
        options: NodeOptions = {**self._options}
        if self._node_options is not None:
            options.update(self._node_options(node_id))
        return Node(
            node_id,
            data_dir=self.root / node_id,
            peers={m: f"local:{m}" for m in self._members},
            network=self.hub.network(node_id),
            durability=self._durability,
            engine=self._engine,
            **options,
        )

    # -- members ----------------------------------------------------------------------------

    @property
    def ids(self) -> list[str]:
        """The members' ids, running or not."""
        return list(self._members)

    @property
    def nodes(self) -> dict[str, Node]:
        """Every member's :class:`Node` by id, running or not."""
        return dict(self._nodes)

    @property
    def running(self) -> list[Node]:
        return [node for node in self._nodes.values() if node.running]

    def node(self, node_id: int | str) -> Node:
        """The member ``node_id``."""
        key = str(node_id)
        if key not in self._nodes:
            raise KeyError(f"no member {key!r}; the members are {self._members}")
        return self._nodes[key]

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> Cluster:
        """Start every member that is not running and wait for a leader."""
        self._closed = False
        await asyncio.gather(*(n.start() for n in self._nodes.values() if not n.running))
        await self.wait_for_leader()
        return self

    async def close(self) -> None:
        """Stop every member; remove the data directory if the cluster made it. Every
        member says it is stopping first, so that none hands leadership to another."""
        self._closed = True
        for node in self._nodes.values():
            if node.running:
                say_goodbye(node)
        results = await asyncio.gather(*(n.stop() for n in self._nodes.values()),
                                       return_exceptions=True)
        if self._tmp is not None:
            self._tmp.cleanup()
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def __aenter__(self) -> Cluster:
        try:
            return await self.start()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def kill(self, node_id: int | str) -> Node:
        """Stop member ``node_id`` at once: its links drop, operations waiting on it fail
        with ``NodeNotRunning``, it hands nothing over. Its data directory stays for
        :meth:`restart`."""
        node = self.node(node_id)
        await node.stop(hand_over=False)
        return node

    async def restart(self, node_id: int | str, *, fresh: bool = False) -> Node:
        """Start member ``node_id`` again from its data directory (stopping it first if it
        runs). The same :class:`Node` comes back, so cells opened on it keep working;
        with ``fresh`` a new ``Node`` object replaces it, as a restarted process would."""
        key = str(node_id)
        node = self.node(key)
        if node.running:
            await node.stop()
        if fresh:
            node = self._nodes[key] = self._make(key)
        await node.start()
        return node

    async def add_member(self, node_id: int | str | None = None, *,
                         timeout: float | None = None) -> Node:
        """Start a new member (default id: the next number) and have the leader add it;
        an id no node can have ("04") is refused before anything starts."""
        key = str(node_id) if node_id is not None else str(
            max((int(m) for m in self._members if m.isdigit()), default=0) + 1)
        if key in self._nodes:
            raise InvalidConfiguration(f"node {key} is already a member")
        if (problem := id_problem(key)) is not None:
            raise InvalidConfiguration(problem)
        self._members.append(key)
        node = self._nodes[key] = self._make(key)
        try:
            await node.start()
            leader = await self.wait_for_leader()
            await leader.add_member(key, timeout=timeout)
        except BaseException:
            await node.stop()
            self._members.remove(key)
            del self._nodes[key]
            raise
        return node

    async def remove_member(self, node_id: int | str, *, timeout: float | None = None) -> None:
        """Have the leader remove member ``node_id``, then stop it."""
        key = str(node_id)
        node = self.node(key)
        leader = await self.wait_for_leader()
        await leader.remove_member(key, timeout=timeout)
        await node.stop()
        self._members.remove(key)
        del self._nodes[key]

    # -- network ----------------------------------------------------------------------------

    def partition(self, *groups: Iterable[int | str]) -> None:
        """Cut every link between members of different groups (until :meth:`heal`)."""
        self.hub.partition(*[{str(m) for m in group} for group in groups])

    def isolate(self, node_id: int | str) -> None:
        """Cut every link of member ``node_id``."""
        key = self.node(node_id).node_id
        self.hub.partition({key}, set(self._members) - {key})

    def cut_one_way(self, source: int | str, target: int | str) -> None:
        """Frames from ``source`` to ``target`` are lost; the other direction works."""
        self.hub.cut_one_way(str(source), str(target))

    def heal(self) -> None:
        """Restore every link; :meth:`settle` waits until the members caught up."""
        self.hub.heal()

    # -- waiting ----------------------------------------------------------------------------

    async def wait_for_leader(
        self, *, among: Iterable[int | str] | None = None, timeout: float = 10.0
    ) -> Node:
        """The running member that leads (only one of ``among`` counts, when given),
        waiting for an election; ``TimeoutError`` after ``timeout`` seconds,
        ``NodeNotRunning`` at once once the cluster is closed."""
        allowed = None if among is None else {str(m) for m in among}
        deadline = time.monotonic() + timeout
        while True:
            for node in self.running:
                if (allowed is None or node.node_id in allowed) and node.is_leader:
                    return node
            if self._closed and not self.running:
                raise NodeNotRunning("the test cluster is closed (its `async with "
                                     "testing.cluster(...)` block has ended): use it inside "
                                     "the block", applied=False)
            if time.monotonic() > deadline:
                states = {n.node_id: n.status()["state"] for n in self.running}
                raise TimeoutError(
                    f"no leader among {sorted(allowed or self._members)} within {timeout}s; "
                    f"running members: {states}"
                )
            await asyncio.sleep(0.01)

    async def leader(self, *, timeout: float = 10.0) -> Node:
        """The current leader (after waiting for one)."""
        return await self.wait_for_leader(timeout=timeout)

    async def followers(self, *, timeout: float = 10.0) -> list[Node]:
        """The running members other than the current leader."""
        leader = await self.wait_for_leader(timeout=timeout)
        return [node for node in self.running if node is not leader]

    async def settle(self, *, timeout: float | None = None) -> None:
        """Return once every running member has applied everything committed before the
        call (a barrier on each; each must reach a majority)."""
        await self.wait_for_leader(timeout=10.0 if timeout is None else timeout)
        for node in self.running:
            await node.barrier(timeout=timeout)


def cluster(
    size: int = 3,
    *,
    data_dir: str | Path | None = None,
    durability: Durability = "none",
    engine: EngineConfig = FAST_ENGINE,
    node_options: Callable[[str], NodeOptions] | None = None,
    **options: Unpack[NodeOptions],
) -> Cluster:
    """An unstarted :class:`Cluster` of ``size`` members: ``async with cluster(3) as c:``."""
    return Cluster(size, data_dir=data_dir, durability=durability, engine=engine,
                   node_options=node_options, **options)
