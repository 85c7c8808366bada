"""One simulated member: the real Replica on a simulated disk, clock and network.

The member is driven the way the asyncio driver drives it, with the same
:class:`~lazily_queue.raft.pipeline.CommitPipeline`: each half of a step (prepare, tick)
writes its records at once, and an fsync either runs for a while (virtual time, the
driver's worker thread) while the member goes on, or runs *inline* as the driver runs it
while fsyncs are quick, in no virtual time, nothing else happening on the member
meanwhile. Either starts between the two halves (or after the tick, for what the tick
wrote, when none is under way). Which one is the driver's rule
(:class:`~lazily_queue.raft.fsync.InlinePolicy`) applied to simulated fsync durations,
with the scenario's threshold. The pipeline decides what a step's output may release
and when. A crash before an fsync completes loses the unsynced bytes (perhaps leaving a
torn record) and every message held. A write or fsync the disk
refuses stalls the member exactly as the driver stalls a node (nothing released,
frames dropped, waiters failed) until a retry writes and fsyncs everything again.
A journal that fails its checks on restart is never applied: the member's data
directory is wiped, keeping only the term and vote, and it rejoins empty.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lazily_queue.raft.errors import StorageUnavailable
from lazily_queue.raft.fsync import InlinePolicy
from lazily_queue.raft.journal import DurableJournal, JournalCorruptedError, JournalError
from lazily_queue.raft.pipeline import CommitPipeline
from lazily_queue.raft.proposals import ReplicaConfig
from lazily_queue.raft.ready import Ready
from lazily_queue.raft.records import read_records
from lazily_queue.raft.rejoin import wipe_for_rejoin
from lazily_queue.raft.replica import Replica
from lazily_queue.raft.snapshot import SnapshotError
from lazily_queue.replicated.view import ReadView

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
        inline_fsync_below: float = 0.0,
    ) -> None:
        self.node_id = node_id
        self.members = members
        self.clock = clock
        self.wall = WallClock(clock)
        self.rng = rng
        self.history = history
        self.config = config
        self.fsync_latency = fsync_latency
        #: Where the next fsync runs (see the module docstring).
        self.fsyncs = InlinePolicy(inline_fsync_below)
        #: Fsyncs run inline and on the (simulated) worker thread, over every incarnation.
        self.inline_fsyncs = 0
        self.worker_fsyncs = 0
        #: Called right before an inline fsync (a crash armed for the next fsync).
        self.before_inline_fsync: Callable[[], None] = lambda: None
        self.trace = trace
        self.disk = SimDisk()
        self.dir = f"/sim/{node_id}/raft"
        self.replica: Replica | None = None
        #: The applied state of the current incarnation (``None`` before the first start).
        self.view: ReadView | None = None
        self.incarnation = 0
        self.wipes = 0
        self.corruptions_detected = 0
        #: A fault damaged this member's files; its next start must find the damage.
        self.damaged_on_purpose = False
        #: A fault took durable data from this member (wiped, or a record damaged) and it
        #: has not held the highest committed entry since.
        self.lost_data = False
        self._snapshots_before = (0, 0, 0, 0)
        self.pipeline = CommitPipeline()
        self.fsync_due: float | None = None
        self._fsync_took = 0.0
        self._recovering = False
        self._retry_at = 0.0
        self.stalls = 0
        #: While down: the durable records its disk kept (index -> term).
        self.held: dict[int, int] = {}
        #: Called when the member stalls on its disk and when it recovers.
        self.on_stall: Callable[[], None] = lambda: None

    @property
    def running(self) -> bool:
        return self.replica is not None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Open the journal and snapshot and build the replica; wipe what fails its checks."""
        self.incarnation += 1
        self.fsyncs = InlinePolicy(self.fsyncs.inline_below)  # as a new driver's
        self.pipeline = CommitPipeline()
        self.fsync_due = None
        self._recovering = False
        expected = self.damaged_on_purpose  # kept until a start gets as far as reading
        try:
            self.replica = self._build()
        except (JournalCorruptedError, SnapshotError, JournalError, ValueError) as exc:
            self.damaged_on_purpose = False
            self._damage_found(expected, f"data refused on restart ({type(exc).__name__})")
            self._wipe()
            self.replica = self._build()
            return
        self.damaged_on_purpose = False
        journal = self.replica.journal
        if journal.tail.damaged or journal.meta_damaged:
            self._damage_found(expected, f"damage found on restart (last record: "
                               f"{journal.tail.damaged}, metadata copy: {journal.meta_damaged})")

    def _damage_found(self, expected: bool, what: str) -> None:
        self.corruptions_detected += 1
        self.trace(f"{self.node_id}: {what}")
        if not expected:
            # Crashes and disk errors may cut a torn tail, never damage what was durable.
            self.history.fail(f"{self.node_id}: {what}, but no damage was injected")

    def _build(self) -> Replica:
        journal = DurableJournal(self.disk, self.dir)
        sm = RecordingStateMachine(self.node_id, self.history)
        replica = Replica(
            self.node_id,
            self.members,
            journal=journal,
            snapshot_path=f"{self.dir}/snapshot.cbor",
            fsm=sm,
            config=self.config,
            clock=self.clock,
            wall_clock=self.wall,
            rng=random.Random(self.rng.getrandbits(64)),
        )
        sm.index_source = lambda: replica.engine.last_applied + 1
        # A snapshot write ends 0-2 steps after it started: a crash meanwhile loses it.
        replica.snapshots.writer.delay_polls = self.incarnation % 3
        self.view = ReadView(sm)
        return replica

    def _wipe(self) -> None:
        self.wipes += 1
        self.lost_data = True
        floor = wipe_for_rejoin(self.disk, self.dir, f"{self.dir}/snapshot.cbor")
        self.trace(f"{self.node_id}: rejoins empty below floor {floor}")

    def snapshot_counts(self) -> tuple[int, int, int, int]:
        """Snapshots (taken, installed, refused as stale, failed to capture) over every
        incarnation."""
        taken, installed, stale, failed = self._snapshots_before
        if self.replica is not None:
            snapshots = self.replica.snapshots
            taken += snapshots.taken
            installed += snapshots.installed
            stale += snapshots.refused_stale
            failed += snapshots.capture_failures
        return taken, installed, stale, failed

    def crash(self) -> None:
        """Stop at once: unsynced bytes and everything held are lost."""
        self._snapshots_before = self.snapshot_counts()
        if self.replica is not None:
            self.held = self._check_durable(self.replica.journal)
        self.replica = None
        self.view = None
        self.pipeline = CommitPipeline()
        self.fsync_due = None
        kept = self.disk.crash(self.rng)
        self.trace(f"{self.node_id}: crash (torn bytes kept: {kept})")

    def holds(self, index: int, term: int) -> bool:
        """Whether this member holds entry ``index`` of ``term`` durably (on its disk when
        it is down; in its journal, or below it in its snapshot, when it runs)."""
        if self.replica is not None:
            journal = self.replica.journal
            if journal.first_index > index:
                return True
            return journal.durable_index >= index and journal.term_at(index) == term
        if not self.held:
            return False
        return min(self.held) > index or self.held.get(index) == term

    def _check_durable(self, journal: DurableJournal) -> dict[int, int]:
        """Every record the journal counts as durable is on the disk's durable bytes;
        returns what the disk holds (index -> term)."""
        data = self.disk.durable_bytes(journal.path)
        try:
            found = read_records(data, journal.path)
        except JournalCorruptedError as exc:
            self.history.fail(f"{self.node_id}: a write damaged the durable journal: {exc}")
        on_disk = {index: (command, term) for command, index, term in found.entries}
        durable = journal.durable_index
        for command, index, term in journal[:]:
            if index > durable:
                break
            if on_disk.get(index) != (command, term):
                self.history.fail(
                    f"{self.node_id}: entry {index} was counted durable (durable index "
                    f"{durable}) but the disk does not hold it")
        return {index: term for index, (_, term) in on_disk.items()}

    # -- driving --------------------------------------------------------------------------

    @property
    def stalled(self) -> bool:
        return self.pipeline.stall is not None

    def receive(self, peer: str, messages: list[dict[str, Any]]) -> None:
        if self.replica is None or self.stalled:
            return
        for message in messages:
            self.replica.receive(peer, message)

    def step(self, dispatch: Dispatch) -> bool:
        """One step, as the driver takes it; True when the member must step again at
        once (a leader whose inline fsync after the tick may move its commit index)."""
        replica = self.replica
        if replica is None:
            return False
        if self.stalled:
            self._retry()
            return False
        if not self._half(replica.prepare, dispatch):
            return False
        self._start_fsync(dispatch)
        if self.replica is None or self.stalled:
            return False
        return (self._half(replica.tick, dispatch) and self._start_fsync(dispatch)
                and self.replica is not None and replica.engine.is_leader)

    def publish_commit(self, dispatch: Dispatch) -> None:
        """A leader tells its followers a commit index they have not heard of, as the
        driver does once no step is about to run."""
        if self.replica is not None and not self.stalled and self.replica.commit_unsent:
            self._half(self.replica.publish_commit, dispatch)

    def _half(self, half: Callable[[], Ready], dispatch: Dispatch) -> bool:
        assert self.replica is not None
        released, error = self.pipeline.stepped(
            half(), self.replica.journal.write, lambda early: dispatch(self, early))
        for out in released:
            dispatch(self, out)
        if error is not None:
            self._stall(error, dispatch)
            return False
        return True

    def _journal(self) -> DurableJournal:
        assert self.replica is not None
        return self.replica.journal

    def inline(self) -> bool:
        """Whether the next fsync runs inline (the driver's rule)."""
        return self.fsyncs.inline(self._journal().written_bytes)

    def _start_fsync(self, dispatch: Dispatch) -> bool:
        """Start the fsync the pipeline wants, if any, where the driver would run it. True
        when it ran inline and succeeded (what it covers has been released)."""
        if self.fsync_due is not None or self.pipeline.start_fsync() is None:
            return False
        took = self.rng.uniform(*self.fsync_latency)
        inline = self.inline()
        self.fsyncs.started(self._journal().written_bytes)
        if not inline:
            self._journal().prepare_fsync()
            self.fsync_due = self.clock.now + took
            self._fsync_took = took
            self.worker_fsyncs += 1
            return False
        self.fsyncs.took(took)
        self.inline_fsyncs += 1
        self.before_inline_fsync()
        if self.replica is None:  # crashed before the fsync completed
            return False
        try:
            self.replica.journal.fsync(detached=False)
        except OSError as exc:
            self._stall(exc, dispatch)
            return False
        for ready in self.pipeline.fsync_done():
            dispatch(self, ready)
        return True

    def finish_fsync(self, dispatch: Dispatch) -> None:
        """The fsync started earlier has completed: release what it covers."""
        if self.replica is None or self.fsync_due is None:
            return
        self.fsync_due = None
        self.fsyncs.took(self._fsync_took)
        journal = self.replica.journal
        recovering, self._recovering = self._recovering, False
        try:
            journal.fsync()
        except OSError as exc:
            if recovering:
                journal.discard_unsynced()
            else:
                self._stall(exc, dispatch)
            return
        if recovering:
            self.trace(f"{self.node_id}: journal writable again; held output released")
            released = self.pipeline.recovered()
            self.on_stall()
        else:
            released = self.pipeline.fsync_done()
        for ready in released:
            dispatch(self, ready)
        if not self.replica.engine.is_leader:  # a leader steps next (see Cluster.run_until)
            self._start_fsync(dispatch)

    def _stall(self, error: OSError, dispatch: Dispatch) -> None:
        """As the driver: nothing unsynced is trusted or released; waiters fail."""
        assert self.replica is not None
        self.replica.journal.discard_unsynced()
        self.fsync_due = None
        self._recovering = False
        self._retry_at = self.clock.now + 0.2
        if not self.pipeline.failed(f"cannot write its journal: {error.strerror or error}"):
            return
        self.stalls += 1
        self.trace(f"{self.node_id}: disk error ({error.strerror or error}); stalled")
        self.on_stall()

        def failure(unknown: bool) -> BaseException:
            outcome = "its outcome is unknown" if unknown else "the operation was not applied"
            return StorageUnavailable(f"node {self.node_id} cannot write its journal; {outcome}")

        dispatch(self, Ready(completions=self.replica.fail_waiters(failure)))

    def _retry(self) -> None:
        """While stalled: write every unsynced record again, then fsync (virtual time)."""
        if self.replica is None or self._recovering or self.clock.now < self._retry_at:
            return
        self._retry_at = self.clock.now + 0.2
        journal = self.replica.journal
        try:
            journal.write()
        except OSError:
            journal.discard_unsynced()
            return
        self._recovering = True
        self._fsync_took = self.rng.uniform(*self.fsync_latency)
        self.fsync_due = self.clock.now + self._fsync_took

    def flush_all(self, dispatch: Dispatch) -> None:
        """Finish any fsync at once (used when the run ends)."""
        while self.fsync_due is not None:
            self.finish_fsync(dispatch)
