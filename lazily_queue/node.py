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

The node composes: consensus (:mod:`.raft`) replicating the queue state machine
(:mod:`.replicated`), event routing to the cells' storages (:mod:`.routing`), leader
maintenance (:mod:`.maintenance`), its cells (:mod:`.node_cells`), its operations on
the cluster: barrier, leader, membership changes and status (:mod:`.node_cluster`), and
the mesh it links to its peers by default (:mod:`.node_network`). This module holds its
construction and lifecycle.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from lazily_transports import TLSFiles

from .cells.job import settle_background_acks
from .cells.prefetch import return_taken
from .cells.queue import QueueCell
from .cells.topic import TopicCell
from .cells.work_queue import WorkQueueCell
from .clean_stop import hand_over_leadership, say_goodbye
from .client.access import ClientAccess
from .client.server import ClientServer
from .core.dedup import DedupLimits
from .datadir import ClusterMismatch as ClusterMismatch  # part of this module's API
from .datadir import DataDirectoryTooNew as DataDirectoryTooNew  # part of this module's API
from .datadir import (
    DirectoryLock,
    check_can_rejoin,
    check_complete,
    claim_directory,
    disk_problem,
)
from .errors import AddressInUse, InvalidConfiguration, shown, shown_path
from .links import LinkSettings
from .maintenance import Maintenance
from .member_addresses import SavedAddresses
from .names import DEFAULT_MAX_OBJECTS, DEFAULT_MAX_SUBSCRIBERS, check_max_objects
from .node_cells import NodeCells
from .node_cluster import NodeCluster
from .node_network import mesh_network
from .node_settings import check_data_dir, check_settings, peer_address_problem
from .outermost import OutermostBlock
from .raft.batch import DEFAULT_MAX_MESSAGE_BYTES
from .raft.disk import Disk, OsDisk
from .raft.driver import Driver
from .raft.engine import EngineConfig
from .raft.errors import NodeNotRunning, StorageUnavailable
from .raft.journal import DurableJournal
from .raft.link_identity import LIVE_ELECTIONS
from .raft.network import RaftNetwork
from .raft.proposals import ReplicaConfig
from .raft.replica import Replica
from .raft.snapshot import SnapshotError
from .reactive import Context, resolve_context
from .replicated.state_machine import StateMachine
from .replicated.view import ReadView
from .routing import EventObserver, EventRouter
from .stale_peers import StalePeers
from .storage.give_backs import SETTLE_WAIT, settle_returns
from .vitals_proof import vitals_key

Durability = Literal["fsync", "none"]


class Node(OutermostBlock, NodeCells, NodeCluster):
    """A cluster member: consensus, the replicated state, its network and the cells."""

    def __init__(
        self,
        node_id: int | str,
        *,
        data_dir: str | os.PathLike[str] | None,
        peers: Mapping[int, str] | Mapping[str, str] | Mapping[int | str, str] | None = None,
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
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_objects: int = DEFAULT_MAX_OBJECTS,
        max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS,
        tls: TLSFiles | None = None,
        ice_servers: Sequence[Mapping[str, Any]] | None = None,
        signaling_token: str | None = None,
        clients: ClientAccess | None = None,
        dedup: DedupLimits | None = None,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        """``disk`` replaces the file operations of the journal and snapshots (tests
        inject failing disks); ``disk_retry`` is how often a node whose disk refuses
        writes tries again. ``max_message_bytes`` bounds the message of a push or
        publish (1 MiB by default, at most 4 MiB; the same on every node): a larger one
        raises :class:`~lazily_queue.errors.MessageTooLarge`. ``max_objects`` caps the
        queues, topics and work queues the cluster holds, as this member creates them
        (:mod:`.names`; :class:`~lazily_queue.errors.TooManyObjects`), ``max_subscribers``
        a topic's subscriptions (:class:`~lazily_queue.errors.TooManySubscribers`). ``tls``
        (:mod:`lazily_transports.tls`) serves ``tls://`` and ``wss://``; ``ice_servers``
        (``{"urls", "username", "credential"}``) and ``signaling_token`` serve
        ``webrtc+ws(s)://`` addresses (:mod:`.links`). ``clients`` serves processes that
        are not members (:func:`lazily_queue.connect`): on the listen address, or the
        access's own. ``dedup`` bounds the window of producer message ids (by default 20000
        ids for 5 minutes); the cluster follows the bounds of its most recent leader."""
        self.node_id = str(node_id)
        check_settings(cluster=cluster, peers=peers, op_timeout=op_timeout,
                       tick_interval=tick_interval, maintenance_interval=maintenance_interval,
                       topic_gc_interval=topic_gc_interval, disk_retry=disk_retry,
                       kinds={"engine": (engine, EngineConfig), "clients": (clients, ClientAccess),
                              "context": (context, Context), "dedup": (dedup, DedupLimits)},
                       max_message_bytes=max_message_bytes)
        self.max_message_bytes = max_message_bytes
        self.max_objects = check_max_objects(max_objects)
        self.max_subscribers = check_max_objects(max_subscribers, "max_subscribers")
        #: The clock (seconds since the epoch) stamping this node's entries as leader
        #: (``None``: ``time.time``).
        self.wall_clock = wall_clock
        self.dedup = dedup or DedupLimits()
        if maintenance_interval is None and self.dedup != DedupLimits():
            raise InvalidConfiguration(
                "dedup bounds are proposed by the leader's maintenance, which "
                "maintenance_interval=None turns off: set an interval or leave dedup unset")
        if durability not in ("fsync", "none"):
            raise InvalidConfiguration(
                f"durability must be 'fsync' (default) or 'none', not {shown(durability)}"
            )
        peer_map = {str(k): str(v) for k, v in (peers or {}).items()}
        if self.node_id in peer_map:
            listen = listen or peer_map.pop(self.node_id)
        if network is None and (problem := peer_address_problem(
                self.node_id, listen, peer_map, "give it id {peer}")):
            raise InvalidConfiguration(problem)
        self.peers = peer_map
        self.listen = listen
        self._links = None if network is not None else LinkSettings(
            self.node_id, listen, peer_map, tls, ice_servers, signaling_token)
        self.cluster = cluster
        self.durability = durability
        self.op_timeout = op_timeout
        self.ctx = resolve_context(context)
        self._secret = secret.encode() if isinstance(secret, str) else secret
        #: The key proving this member's vitals (:mod:`.vitals_proof`; none without a secret).
        self.vitals_key = None if self._secret is None else vitals_key(self._secret, cluster)
        self._allow_unauthenticated = allow_unauthenticated
        check_data_dir(data_dir, durability)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix=f"lazily-node{self.node_id}-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        self._dir_lock = DirectoryLock(self.data_dir)
        self._network = network
        self._engine_config = engine or EngineConfig()
        self._tick_interval = tick_interval
        self._rng = random.Random(seed)
        self._disk = disk
        self._own_disk: OsDisk | None = None  # made by this node: closed when it stops
        self._disk_retry = disk_retry
        self._driver: Driver | None = None
        self._view: ReadView | None = None
        self._journal: DurableJournal | None = None
        self._router = EventRouter(self.ctx, self.node_id)
        self._addresses = SavedAddresses(None)
        self._router.add_observer(lambda events: self._addresses.observe(events))
        self._queue_cells: dict[str, QueueCell[Any]] = {}
        self._topic_cells: dict[str, TopicCell[Any]] = {}
        self._work_cells: dict[str, WorkQueueCell] = {}
        self._let_deleted_go()
        self.maintenance_interval = maintenance_interval
        self.topic_gc_interval = topic_gc_interval
        self._maintenance = Maintenance(self)
        self._stale_peers = StalePeers(self)
        self.clients = None if clients is None else ClientServer(
            self, clients, on_listen=network is None)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"Node({self.node_id!r}, cluster={self.cluster!r}, {state})"

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._driver is not None and self._driver.running

    async def start(self) -> None:
        """Lock the data directory, open the journal, start consensus and the network;
        raises :class:`~lazily_queue.datadir.DataDirectoryLocked` while another node
        runs on the same directory, :class:`~lazily_queue.errors.AddressInUse` while
        something listens on its ``listen`` address or its clients' own."""
        if self.running:
            return
        raft_dir = str(self.data_dir / "raft")
        state_machine = StateMachine()
        if self.clients is not None:
            state_machine.tap = self.clients.watched
        try:
            self._dir_lock.acquire()
            replica = self._open(raft_dir, state_machine)
            check_can_rejoin(replica.engine.members, replica.engine.rejoining, self.node_id)
            network = self._network if self._network is not None else self._default_network()
        except SnapshotError as exc:
            self._release_directory()
            raise SnapshotError(
                f"{raft_dir}/snapshot.cbor: {exc}; nothing was applied. Stop node "
                f"{self.node_id} and run `lazily-queue rejoin --config FILE` (or lazily_queue."
                "raft.rejoin.wipe_for_rejoin) to rebuild it from its peers"
            ) from None
        except OSError as exc:
            self._release_directory()
            raise StorageUnavailable(
                f"node {self.node_id} cannot use its data directory {shown_path(raft_dir)}: "
                f"{disk_problem(exc)}, then start it again"
            ) from None
        except BaseException:
            self._release_directory()
            raise
        view = ReadView(state_machine)
        self._view = view
        self._addresses = SavedAddresses(self._journal)
        self._driver = Driver(
            replica,
            network,
            tick_interval=self._tick_interval,
            on_events=self._router.route,
            address_of=lambda peer: self.peers.get(peer) or self.recorded_address(peer),
            disk_retry=self._disk_retry,
        )
        try:
            await self._driver.start()
            for storage in self._router.storages():
                storage.rebind(self._driver, view)
            self._router.reset()
            self._maintenance.start()
            self._stale_peers.start()
            if self.clients is not None:
                await self.clients.start()
        except BaseException as exc:  # an address in use: nothing stays running or locked
            if not self._driver.running:
                with contextlib.suppress(Exception):
                    await network.stop()
            await self.stop()
            if (isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE
                    and not isinstance(exc, AddressInUse) and self.listen is not None):
                raise AddressInUse.at(self.node_id, self.listen, exc, clients=False) from None
            raise

    def _open(self, raft_dir: str, state_machine: StateMachine) -> Replica:
        """The journal, snapshot and replica of this node's data directory."""
        if (disk := self._disk) is None:
            disk = self._own_disk = OsDisk(sync=self.durability == "fsync")
        journal = DurableJournal(disk, raft_dir)
        check_complete(journal, disk, f"{raft_dir}/snapshot.cbor")
        claim_directory(journal, self.node_id, self.cluster, self.data_dir)
        self._journal = journal
        return Replica(
            self.node_id,
            sorted({self.node_id, *self.peers}),
            journal=journal,
            snapshot_path=f"{raft_dir}/snapshot.cbor",
            fsm=state_machine,
            config=ReplicaConfig(engine=self._engine_config,
                                 max_message_bytes=self.max_message_bytes),
            clock=time.monotonic,
            wall_clock=self.wall_clock or time.time,
            rng=self._rng,
        )

    def _default_network(self) -> RaftNetwork:
        return mesh_network(self, secret=self._secret,
                            allow_unauthenticated=self._allow_unauthenticated,
                            links=self._links, journal=self._journal,
                            live_window=LIVE_ELECTIONS * self._engine_config.election_timeout_max)

    async def stop(self, *, hand_over: bool = True) -> None:
        """Stop the member. Every call waiting on it (an operation in flight, a pop, a
        claim, a stream, a push waiting for room) fails with :class:`NodeNotRunning`, as
        does every later call until it starts again; readers keep the applied state.
        With ``hand_over`` (the default) what this node's own consumers hold is settled
        first: the elements a queue iteration took and did not hand out go back, the
        queued background acks of ``deliveries()`` commit (a loop that broke out of
        either leaves them to its iterator's finalizer, which would run after the
        stop); then it tells its peers it is stopping and, leading, hands leadership
        to a follower (:mod:`.clean_stop`). Without it the node stops at once, as a
        crashed process would."""
        if hand_over and self._driver is not None and self._driver.running:
            await return_taken([*self._router.queues.values(),
                                *self._router.work_queues.values()])
            await settle_returns(list(self._router.queues.values()), SETTLE_WAIT)
            await settle_background_acks(list(self._router.work_queues.values()))
            say_goodbye(self)
            await hand_over_leadership(self)
        if self.clients is not None:
            await self.clients.stop()
        await self._maintenance.stop()
        await self._stale_peers.stop()
        if self._driver is not None:
            was_running = self._driver.running
            await self._driver.stop()
            if was_running:
                self._router.reset()  # wakes the cells' waiters, which then fail
        self._release_directory()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _release_directory(self) -> None:
        """Close the files of the data directory this node opened and unlock it."""
        disk, self._own_disk = self._own_disk, None
        if disk is not None:
            disk.close()
        self._dir_lock.release()

    async def _begin_block(self) -> None:
        await self.start()

    async def _end_blocks(self) -> None:
        await self.stop()

    @property
    def driver(self) -> Driver:
        if self._driver is None:
            raise NodeNotRunning(f"node {self.node_id} is not started; use `async with node:`",
                                 applied=False)
        return self._driver

    @property
    def view(self) -> ReadView:
        """This node's applied replicated state (read-only)."""
        if self._view is None:
            raise NodeNotRunning(f"node {self.node_id} is not started; use `async with node:`",
                                 applied=False)
        return self._view

    def recorded_address(self, member: str) -> str | None:
        """The address the cluster recorded for ``member`` (``add_member``), applied here
        or kept from before a restart; None without one."""
        return (self._view.address(member) if self._view is not None else None) or (
            self._addresses.get(member))

    def add_event_observer(self, observer: EventObserver) -> None:
        """Call ``observer(events)`` after each wave of applied transitions (metrics),
        before the cells see them. Events are the typed values of
        :mod:`lazily_queue.replicated.events`."""
        self._router.add_observer(observer)
