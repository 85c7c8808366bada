"""Node: one member of a replicated lazily-queue cluster, embedded in the application.

::

    async with Node(1, data_dir="data/1", peers={2: "unix:///run/q2", 3: "unix:///run/q3"},
                    listen="unix:///run/q1", secret=b"cluster secret") as node:
        jobs = node.queue("jobs")
        await jobs.push({"id": 1})

Every queue, topic and work queue of a node lives in one Raft group. An operation
returns once it is committed on a majority and applied locally; readers show this
node's applied state. ``durability="fsync"`` (the default) makes every acknowledged
operation durable on a majority of disks; ``"none"`` skips fsync (tests, caches).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from .cells.queue import QueueCell
from .cells.topic import TopicCell
from .cells.work_queue import WorkQueueCell
from .errors import InvalidConfiguration
from .raft import commands as C
from .raft.disk import Disk, OsDisk
from .raft.driver import Driver
from .raft.engine import EngineConfig
from .raft.errors import NodeNotRunning, StorageUnavailable
from .raft.journal import DurableJournal
from .raft.network import RaftNetwork
from .raft.replica import Replica, ReplicaConfig
from .raft.snapshot import SnapshotError
from .raft.state_machine import Event
from .reactive import Context, resolve_context
from .storage.raft_collections import RaftTopicStorage, RaftWorkQueueStorage
from .storage.raft_queue import RaftQueueStorage, raise_op_error

log = logging.getLogger(__name__)

Durability = Literal["fsync", "none"]


class ClusterMismatch(InvalidConfiguration):
    """The data directory belongs to another node or cluster."""


class Node:
    """A cluster member: engine, journal, state machine, network and the cells on top."""

    def __init__(
        self,
        node_id: int | str,
        *,
        data_dir: str | os.PathLike[str] | None,
        peers: Mapping[int | str, str] | None = None,
        listen: str | None = None,
        secret: bytes | str | None = None,
        cluster: str = "lazily-queue",
        durability: Durability = "fsync",
        network: RaftNetwork | None = None,
        context: Context | None = None,
        op_timeout: float = 10.0,
        engine: EngineConfig | None = None,
        tick_interval: float = 0.02,
        allow_unauthenticated: bool = False,
        seed: int | None = None,
        maintenance_interval: float | None = 0.2,
        topic_gc_interval: float = 5.0,
        disk: Disk | None = None,
        disk_retry: float = 1.0,
    ) -> None:
        """``disk`` replaces the file operations of the journal and snapshots (tests
        inject failing disks); ``disk_retry`` is how often a node whose disk refuses
        writes tries again."""
        self.node_id = str(node_id)
        if durability not in ("fsync", "none"):
            raise InvalidConfiguration(
                f"durability must be 'fsync' (default) or 'none', not {durability!r}"
            )
        peer_map = {str(k): str(v) for k, v in (peers or {}).items()}
        if self.node_id in peer_map:
            listen = listen or peer_map.pop(self.node_id)
        self.peers = peer_map
        self.listen = listen
        self.cluster = cluster
        self.durability = durability
        self.op_timeout = op_timeout
        self.ctx = resolve_context(context)
        self._secret = secret.encode() if isinstance(secret, str) else secret
        self._allow_unauthenticated = allow_unauthenticated
        if data_dir is None:
            if durability == "fsync":
                raise InvalidConfiguration(
                    "data_dir is required with durability='fsync'; pass durability='none' for "
                    "an ephemeral node whose data lives in a temporary directory"
                )
            self._tmp: tempfile.TemporaryDirectory[str] | None = tempfile.TemporaryDirectory(
                prefix=f"lazily-node{self.node_id}-"
            )
            data_dir = self._tmp.name
        else:
            self._tmp = None
        self.data_dir = Path(data_dir)
        self._network = network
        self._engine_config = engine or EngineConfig()
        self._tick_interval = tick_interval
        self._rng = random.Random(seed)
        self._disk = disk
        self._disk_retry = disk_retry
        self._driver: Driver | None = None
        self._journal: DurableJournal | None = None
        self._queues: dict[str, RaftQueueStorage[Any]] = {}
        self._queue_cells: dict[str, QueueCell[Any]] = {}
        self._topics: dict[str, RaftTopicStorage] = {}
        self._topic_cells: dict[str, TopicCell[Any]] = {}
        self._works: dict[str, RaftWorkQueueStorage] = {}
        self._work_cells: dict[str, WorkQueueCell] = {}
        self.maintenance_interval = maintenance_interval
        self.topic_gc_interval = topic_gc_interval
        self._maintenance: asyncio.Task[None] | None = None
        self._event_observers: list[Callable[[list[Event]], None]] = []

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"Node({self.node_id!r}, cluster={self.cluster!r}, {state})"

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._driver is not None and self._driver.running

    async def start(self) -> None:
        if self.running:
            return
        raft_dir = str(self.data_dir / "raft")
        try:
            replica = self._open(raft_dir)
        except SnapshotError as exc:
            raise SnapshotError(
                f"{raft_dir}/snapshot.cbor: {exc}; nothing was applied. Stop node "
                f"{self.node_id} and run `lazily-queue rejoin --config FILE` (or lazily_queue."
                "raft.rejoin.wipe_for_rejoin) to rebuild it from its peers"
            ) from None
        except OSError as exc:
            raise StorageUnavailable(
                f"node {self.node_id} cannot use its data directory {raft_dir}: "
                f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}; free "
                "space or fix the disk, then start it again"
            ) from None
        network = self._network if self._network is not None else self._default_network()
        self._driver = Driver(
            replica,
            network,
            tick_interval=self._tick_interval,
            on_events=self._on_events,
            addresses=self.peers,
            disk_retry=self._disk_retry,
        )
        await self._driver.start()
        with self.ctx.batch():
            for group in (self._queues, self._topics, self._works):
                for storage in group.values():
                    storage.rebind(self._driver)
                    storage.on_reset()
        if self.maintenance_interval is not None:
            self._maintenance = asyncio.create_task(
                self._maintain(), name=f"lazily-maintenance-{self.node_id}"
            )

    def _open(self, raft_dir: str) -> Replica:
        """The journal, snapshot and replica of this node's data directory."""
        disk = self._disk or OsDisk(sync=self.durability == "fsync")
        journal = DurableJournal(disk, raft_dir)
        self._check_identity(journal)
        self._journal = journal
        return Replica(
            self.node_id,
            sorted({self.node_id, *self.peers}),
            journal=journal,
            snapshot_path=f"{raft_dir}/snapshot.cbor",
            config=ReplicaConfig(engine=self._engine_config),
            clock=time.monotonic,
            wall_clock=time.time,
            rng=self._rng,
        )

    def _default_network(self) -> RaftNetwork:
        from .raft.mesh import MeshNetwork

        if self.listen is None:
            raise InvalidConfiguration(
                f"node {self.node_id}: give `listen=` (its own address, e.g. "
                "'unix:///run/q1.sock' or 'tcp://127.0.0.1:7001') or include it in `peers`"
            )
        journal = self._journal
        meta = journal.meta if journal is not None else {}
        return MeshNetwork(
            self.node_id,
            listen=self.listen,
            peers=self.peers,
            cluster=self.cluster,
            secret=self._secret,
            allow_unauthenticated=self._allow_unauthenticated,
            incarnation=str(meta.get("incarnation", "")),
            pins=meta.get("peer_incarnations") or {},
            on_pin=None if journal is None else (
                lambda pins: journal.set_meta("peer_incarnations", pins)),
        )

    def _check_identity(self, journal: DurableJournal) -> None:
        """The data directory must be this node's; give it an identity on first use."""
        meta = journal.meta
        owner = meta.get("node")
        cluster = meta.get("cluster")
        if owner is not None and (owner != self.node_id or cluster != self.cluster):
            raise ClusterMismatch(
                f"data directory {self.data_dir} belongs to node {owner} of cluster "
                f"{cluster!r}, but this is node {self.node_id} of cluster {self.cluster!r}; "
                "give every node its own data directory"
            )
        if owner is None:
            journal.set_meta("node", self.node_id)
            journal.set_meta("cluster", self.cluster)
        if "incarnation" not in meta:
            journal.set_meta("incarnation", secrets.token_hex(8))
        if journal.needs_sync:
            journal.sync()

    async def stop(self) -> None:
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
            self._maintenance = None
        if self._driver is not None:
            await self._driver.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def __aenter__(self) -> Node:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    @property
    def driver(self) -> Driver:
        if self._driver is None:
            raise NodeNotRunning(f"node {self.node_id} is not started; use `async with node:`")
        return self._driver

    # -- cells ------------------------------------------------------------------------------

    def queue(self, name: str, *, capacity: int | None = None) -> QueueCell[Any]:
        """The replicated queue ``name`` (declared on first use; same capacity everywhere)."""
        cell = self._queue_cells.get(name)
        if cell is not None:
            if cell.capacity() != capacity:
                raise InvalidConfiguration(
                    f"queue {name!r} is already open with capacity {cell.capacity()}"
                )
            return cell
        storage: RaftQueueStorage[Any] = RaftQueueStorage(
            self.driver, name, capacity=capacity, timeout=self.op_timeout
        )
        cell = QueueCell(storage, context=self.ctx, name=name)
        self._queues[name] = storage
        self._queue_cells[name] = cell
        return cell

    def topic(self, name: str) -> TopicCell[Any]:
        """The replicated topic ``name`` (declared on first use)."""
        cell = self._topic_cells.get(name)
        if cell is None:
            storage = RaftTopicStorage(self.driver, name, timeout=self.op_timeout)
            cell = TopicCell(storage, context=self.ctx, name=name)  # type: ignore[arg-type]
            self._topics[name] = storage
            self._topic_cells[name] = cell
        return cell

    def work_queue(
        self, name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 3
    ) -> WorkQueueCell:
        """The replicated work queue ``name``.

        ``visibility_timeout`` is in seconds; leases, deadlines and ``now`` inside the
        replicated queue are the leader's milliseconds since the Unix epoch. Every node
        must open it with the same settings.
        """
        return self.open_work_queue(name, round(visibility_timeout * 1000), max_deliveries)

    def open_work_queue(
        self, name: str, visibility_timeout_ms: int, max_deliveries: int
    ) -> WorkQueueCell:
        """:meth:`work_queue` with the lease length in the replicated unit (ms)."""
        timeout_ms = visibility_timeout_ms
        cell = self._work_cells.get(name)
        if cell is not None:
            if (cell.visibility_timeout, cell.max_deliveries) != (timeout_ms, max_deliveries):
                raise InvalidConfiguration(
                    f"work queue {name!r} is already open with other settings"
                )
            return cell
        storage = RaftWorkQueueStorage(
            self.driver,
            name,
            visibility_timeout=timeout_ms,
            max_deliveries=max_deliveries,
            timeout=self.op_timeout,
        )
        cell = WorkQueueCell(storage, context=self.ctx, name=name)  # type: ignore[arg-type]
        self._works[name] = storage
        self._work_cells[name] = cell
        return cell

    def add_event_observer(self, observer: Callable[[list[Event]], None]) -> None:
        """Call ``observer(events)`` after each wave of applied transitions (metrics).

        Events are ``(kind, name, data)``: ``("queue", name, (op, pre_len))``,
        ``("topic", name, subscriber_ids)``, ``("work", name, reader_mask)``,
        ``("queue_declared", name, capacity)``, ``("address", node, address)`` and
        ``("restored", "", None)`` after a snapshot install.
        """
        self._event_observers.append(observer)

    def _on_events(self, events: list[Event]) -> None:
        for observer in self._event_observers:
            try:
                observer(events)
            except Exception:
                log.exception("node %s: an event observer failed", self.node_id)
        with self.ctx.batch():
            for kind, name, data in events:
                target: Any = None
                if kind == "queue":
                    target = self._queues.get(name)
                elif kind == "topic":
                    target = self._topics.get(name)
                elif kind == "work":
                    target = self._works.get(name)
                elif kind == "restored":
                    for group in (self._queues, self._topics, self._works):
                        for storage in group.values():
                            storage.on_reset()
                if target is not None:
                    target.on_event(data)

    async def _maintain(self) -> None:
        """On the leader: expire leases and collect topic retention, as proposals."""
        assert self.maintenance_interval is not None
        last_gc = time.monotonic()
        while True:
            await asyncio.sleep(self.maintenance_interval)
            if not self.is_leader:
                continue
            try:
                await self._maintain_once(time.monotonic() - last_gc >= self.topic_gc_interval)
            except Exception as exc:
                log.info("node %s: maintenance round skipped: %s", self.node_id, exc)
            if time.monotonic() - last_gc >= self.topic_gc_interval:
                last_gc = time.monotonic()

    async def _maintain_once(self, gc_topics: bool) -> None:
        sm = self.driver.replica.sm
        now_ms = int(time.time() * 1000)
        calls = []
        for name, state in sm.work_queues.items():
            deadlines = [d.deadline for d in state.core.in_flight()]
            if deadlines and min(deadlines) < max(now_ms, sm.now):
                calls.append(self.driver.call(C.WORK_REAP, [name, None], timeout=self.op_timeout))
        if gc_topics:
            for name, topic in sm.topics.items():
                if topic.retention_frontier() > topic.base_offset():
                    calls.append(self.driver.call(C.TOPIC_GC, [name], timeout=self.op_timeout))
        if calls:
            await asyncio.gather(*calls)

    # -- cluster --------------------------------------------------------------------------

    async def barrier(self, *, timeout: float | None = None) -> None:
        """Return once this node has applied everything committed before the call.

        Reads made right after are linearizable: the barrier goes through the leader.
        """
        raise_op_error(await self.driver.call(C.BARRIER, [], timeout=timeout or self.op_timeout))

    async def wait_for_leader(self, *, timeout: float = 10.0) -> str:
        """Wait until this node knows a leader; return its id."""
        deadline = time.monotonic() + timeout
        while True:
            leader = self.driver.replica.engine.leader_id
            if leader is not None:
                return leader
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"node {self.node_id} saw no leader within {timeout}s: "
                    f"{self.driver.replica.status()}"
                )
            await self.driver.next_step()

    async def add_member(
        self, node_id: int | str, address: str | None = None, *, timeout: float | None = None
    ) -> None:
        """Add a node to the cluster (one change at a time); start it with every member
        in its ``peers``. Its address is replicated so every member can reach it."""
        node = str(node_id)
        if node in self.driver.replica.engine.members:
            raise InvalidConfiguration(f"node {node} is already a member")
        if address is not None:
            raise_op_error(
                await self.driver.call(C.MEMBER_ADDRESS, [node, address],
                                       timeout=timeout or self.op_timeout)
            )
        await self._membership(lambda cb: self.driver.replica.engine.add_member(node, cb),
                               f"adding node {node}", timeout)

    async def remove_member(self, node_id: int | str, *, timeout: float | None = None) -> None:
        """Remove a node from the cluster; stop it afterwards."""
        node = str(node_id)
        if node not in self.driver.replica.engine.members:
            raise InvalidConfiguration(f"node {node} is not a member")
        await self._membership(lambda cb: self.driver.replica.engine.remove_member(node, cb),
                               f"removing node {node}", timeout)

    async def transfer_leadership(
        self, to: int | str | None = None, *, timeout: float | None = None
    ) -> str:
        """On the leader: hand leadership to ``to`` (or the most caught-up follower)."""
        if not self.is_leader:
            raise InvalidConfiguration(
                f"node {self.node_id} is not the leader ({self.leader_id} is); call this there"
            )
        target = None if to is None else str(to)
        await self._membership(
            lambda cb: self.driver.replica.engine.transfer_leadership(target, cb),
            "transferring leadership", timeout,
        )
        deadline = time.monotonic() + (timeout or self.op_timeout)
        while time.monotonic() < deadline:
            leader = self.leader_id
            if leader is not None and leader != self.node_id:
                return leader
            await self.driver.next_step()
        raise TimeoutError("leadership did not move before the deadline")

    async def _membership(
        self, start: Callable[[Callable[[Any, int], None]], None], what: str,
        timeout: float | None,
    ) -> None:
        from pysyncobj.config import FAIL_REASON

        from .raft.engine import FAIL_NAMES, RETRYABLE

        deadline = time.monotonic() + (timeout or self.op_timeout)
        while True:
            loop = asyncio.get_running_loop()
            fut: asyncio.Future[int] = loop.create_future()

            def done(_: Any, reason: int, fut: asyncio.Future[int] = fut) -> None:
                if not fut.done():
                    fut.set_result(reason)

            start(done)
            self.driver.wake()
            remaining = deadline - time.monotonic()
            try:
                reason = await asyncio.wait_for(fut, max(remaining, 0.01))
            except TimeoutError:
                raise TimeoutError(
                    f"{what} did not commit before the deadline; it may still commit (the "
                    "leader refuses any other membership change until it has)"
                ) from None
            if reason == FAIL_REASON.SUCCESS:
                return
            transient = reason in RETRYABLE or reason == FAIL_REASON.REQUEST_DENIED
            if not transient or time.monotonic() > deadline:
                raise InvalidConfiguration(
                    f"{what} was refused: {FAIL_NAMES.get(reason, reason)} (one membership "
                    "change at a time, after the leader's first entry committed)"
                )
            await asyncio.sleep(0.05)

    @property
    def is_leader(self) -> bool:
        return self.running and self.driver.replica.engine.is_leader

    @property
    def leader_id(self) -> str | None:
        return self.driver.replica.engine.leader_id if self.running else None

    def status(self) -> dict[str, Any]:
        """Raft and queue state as seen from this node."""
        replica = self.driver.replica
        status = replica.status()
        status["cluster"] = self.cluster
        status["durability"] = self.durability
        driver = self.driver
        status["disk"] = {
            "writable": driver.disk_error is None,
            "error": driver.disk_error,
            "since": driver.disk_error_since,
        }
        sm = replica.sm
        status["queues"] = {
            name: {"len": q.len(), "closed": q.is_closed(), "capacity": q.capacity()}
            for name, q in sorted(sm.queues.items())
        }
        status["topics"] = {
            name: {
                "base_offset": t.base_offset(),
                "end_offset": t.end_offset(),
                "retained": t.end_offset() - t.base_offset(),
                "subscribers": {
                    sid: {**rec, "lag": t.end_offset() - rec["cursor"]}
                    for sid, rec in sorted(t.subscriptions().items())
                },
            }
            for name, t in sorted(sm.topics.items())
        }
        status["work_queues"] = {
            name: {
                "pending": w.core.pending_len(),
                "in_flight": w.core.in_flight_len(),
                "dead_letters": w.core.dead_letter_len(),
                "workers": {
                    worker: len(ds) for worker, ds in sorted(w.core.in_flight_by_worker().items())
                },
            }
            for name, w in sorted(sm.work_queues.items())
        }
        mesh = getattr(self.driver.network, "mesh", None)
        if mesh is not None:
            status["listener"] = mesh.listener_stats()
        return status
