"""One simulated member: the real Replica on a simulated disk, clock and network.

The member is driven the way the asyncio driver drives it: each step writes its
records at once, then an fsync runs for a while (virtual time) and only when it has
finished are the messages the step produced released; results of applied entries go
out at once (they are durable on a majority already). A crash in between loses the
unsynced bytes (perhaps leaving a torn record) and every message held.
A journal that fails its checks on restart is never applied: the member's data
directory is wiped, keeping only the term and vote, and it rejoins empty.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

from ..raft.journal import DurableJournal, JournalCorruptedError, JournalError
from ..raft.rejoin import wipe_for_rejoin
from ..raft.replica import Ready, Replica, ReplicaConfig
from ..raft.snapshot import SnapshotError
from .clock import VirtualClock, WallClock
from .disk import SimDisk
from .history import History, RecordingStateMachine

Dispatch = Callable[["SimNode", Ready], None]


class SimNode:
    """A member that can crash, restart, lose unsynced writes and be wiped."""

    def __init__(
        self,
        node_id: str,
        members: list[str],
        *,
        clock: VirtualClock,
        rng: random.Random,
        history: History,
        config: ReplicaConfig,
        fsync_latency: tuple[float, float],
        trace: Callable[[str], None],
    ) -> None:
        self.node_id = node_id
        self.members = members
        self.clock = clock
        self.wall = WallClock(clock)
        self.rng = rng
        self.history = history
        self.config = config
        self.fsync_latency = fsync_latency
        self.trace = trace
        self.disk = SimDisk()
        self.dir = f"/sim/{node_id}/raft"
        self.replica: Replica | None = None
        self.incarnation = 0
        self.wipes = 0
        self.corruptions_detected = 0
        self._snapshots_before = (0, 0)
        self._held: deque[tuple[int, Ready]] = deque()
        self._written = 0
        self._synced = 0
        self.fsync_due: float | None = None
        self._fsync_target = 0

    @property
    def running(self) -> bool:
        return self.replica is not None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Open the journal and snapshot and build the replica; wipe what fails its checks."""
        self.incarnation += 1
        self._held.clear()
        self._written = self._synced = 0
        self.fsync_due = None
        try:
            self.replica = self._build()
        except (JournalCorruptedError, SnapshotError, JournalError, ValueError) as exc:
            self.corruptions_detected += 1
            self.trace(f"{self.node_id}: data refused on restart ({type(exc).__name__}); wiped")
            self._wipe()
            self.replica = self._build()

    def _build(self) -> Replica:
        journal = DurableJournal(self.disk, self.dir)
        sm = RecordingStateMachine(self.node_id, self.history)
        replica = Replica(
            self.node_id,
            self.members,
            journal=journal,
            snapshot_path=f"{self.dir}/snapshot.cbor",
            state_machine=sm,
            config=self.config,
            clock=self.clock,
            wall_clock=self.wall,
            rng=random.Random(self.rng.getrandbits(64)),
        )
        sm.index_source = lambda: replica.engine.last_applied + 1
        return replica

    def _wipe(self) -> None:
        self.wipes += 1
        floor = wipe_for_rejoin(self.disk, self.dir, f"{self.dir}/snapshot.cbor")
        self.trace(f"{self.node_id}: rejoins empty below floor {floor}")

    def snapshot_counts(self) -> tuple[int, int]:
        """Snapshots (taken, installed) over every incarnation."""
        taken, installed = self._snapshots_before
        if self.replica is not None:
            taken += self.replica.snapshots.taken
            installed += self.replica.snapshots.installed
        return taken, installed

    def crash(self) -> None:
        """Stop at once: unsynced bytes and everything held are lost."""
        self._snapshots_before = self.snapshot_counts()
        self.replica = None
        self._held.clear()
        self.fsync_due = None
        kept = self.disk.crash(self.rng)
        self.trace(f"{self.node_id}: crash (torn bytes kept: {kept})")

    # -- driving --------------------------------------------------------------------------

    def receive(self, peer: str, messages: list[dict[str, Any]]) -> None:
        if self.replica is None:
            return
        for message in messages:
            self.replica.receive(peer, message)

    def step(self, dispatch: Dispatch) -> None:
        replica = self.replica
        if replica is None:
            return
        ready = replica.step(sync=False)
        if ready.unsynced:
            self._written += 1
        if not self._held and self._written == self._synced:
            dispatch(self, ready)
            return
        if len(self.members) > 1:
            # As the driver does: results and events need no local fsync when others
            # hold the entries; the messages wait for it.
            results = Ready(completions=ready.completions, orphans=ready.orphans)
            ready.completions, ready.orphans = [], []
            dispatch(self, results)
        self._held.append((self._written, ready))
        self._start_fsync()

    def _start_fsync(self) -> None:
        if self.fsync_due is not None or self._written == self._synced:
            return
        self._fsync_target = self._written
        self.fsync_due = self.clock.now + self.rng.uniform(*self.fsync_latency)

    def finish_fsync(self, dispatch: Dispatch) -> None:
        """The fsync started at ``_start_fsync`` has completed: release what it covers."""
        if self.replica is None or self.fsync_due is None:
            return
        self.fsync_due = None
        self.replica.journal.fsync()
        self._synced = max(self._synced, self._fsync_target)
        while self._held and self._held[0][0] <= self._synced:
            _, ready = self._held.popleft()
            dispatch(self, ready)
        self._start_fsync()

    def flush_all(self, dispatch: Dispatch) -> None:
        """Finish any fsync at once (used when the run ends)."""
        while self.fsync_due is not None:
            self.finish_fsync(dispatch)
