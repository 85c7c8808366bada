"""RaftEngine: PySyncObj's consensus logic with every piece of I/O handed to us.

The engine owns no socket, thread or timer. The driver feeds it messages
(:meth:`RaftEngine.deliver`), ticks it (:meth:`RaftEngine.tick`) and collects what it
wants sent through the ``send`` callback. The journal and snapshot store are ours
(durable, checksummed, CBOR). One replicated method applies one command batch; the
leader stamps the batch with its wall-clock time as it accepts it.

A leader sends AppendEntries once after appending the commands of a step (however many),
on its heartbeat, and when asked to publish a commit index it has not sent yet
(:meth:`RaftEngine.send_commit`): the driver asks once nothing else is about to run, so
under load the commit index rides on the next append instead of costing a round trip.
"""

from __future__ import annotations

import functools
import logging
import random
import struct
from collections.abc import Callable
from typing import Any

from pysyncobj import SyncObjConf, replicated
from pysyncobj.config import FAIL_REASON

from . import entries, patches
from .acks import RepeatedAcks
from .adapters import (
    CommandQueue,
    EngineTransport,
    NoPoller,
    RaftPeer,
    unused_serializer,
    wrap_application,
)
from .batch import DEFAULT_MAX_MESSAGE_BYTES, command_limit
from .delivery import PatchedSyncObj
from .durable_commit import durable_majority_index
from .engine_config import EngineConfig as EngineConfig
from .engine_view import EngineView
from .journal import DurableJournal
from .leading import append_leading, commit_leading, lead_first, light_tick
from .log_config import put_log_changes_in_effect
from .log_reads import read_log_directly
from .outcome import Answer, Outcome, answered, translated
from .prevote import PreVote
from .snapshot import SnapshotStore
from .transfer import LeadershipTransfer

log = logging.getLogger(__name__)

patches.install()

_MEMBERSHIP = 2
#: PySyncObj's own entry types (no-op, membership, version) pass through untouched.
_ENGINE_TYPES = frozenset({b"\x01", b"\x02", b"\x03"})
_bchr = struct.Struct("B").pack

#: Largest command with the default message limit. An entry at least as large as the
#: append batch would take PySyncObj's broken chunked path ("transmission": pickled,
#: cut at the wrong length), so the append batch always exceeds the largest entry.
MAX_COMMAND_BYTES = command_limit(DEFAULT_MAX_MESSAGE_BYTES)
#: Largest command of PySyncObj's own regular entries, which journals written before
#: command entries hold (those are unpickled, see :mod:`.safe_pickle`).
LEGACY_COMMAND_BYTES = 60 * 1024

FOLLOWER, CANDIDATE, LEADER = 0, 1, 2
STATE_NAMES = {FOLLOWER: "follower", CANDIDATE: "candidate", LEADER: "leader"}


class RaftEngine(EngineView, PatchedSyncObj):
    """One Raft member. Every method must be called from the driver's thread; its
    introspection properties are :class:`~.engine_view.EngineView`'s. ``leading()``
    gives the commands it appends first as it becomes leader (:func:`~.leading.lead_first`)."""

    #: Applies up to the commit index as it stands (no durable-commit clamp first).
    apply_committed: Callable[[], Any]

    def __init__(
        self,
        node_id: str,
        peers: list[str],
        *,
        journal: DurableJournal,
        snapshots: SnapshotStore,
        apply: Callable[[bytes, int], Any],
        send: Callable[[str, dict[str, Any]], None],
        config: EngineConfig | None = None,
        max_command_bytes: int = MAX_COMMAND_BYTES,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        rng: random.Random | None = None,
        on_membership: Callable[[str, bool], None] | None = None,
        on_state: Callable[[int, int], None] | None = None,
        leading: Callable[[], list[tuple[bytes, Answer]]] | None = None,
    ) -> None:
        cfg = config or EngineConfig()
        self._node_id = str(node_id)
        self._journal = journal
        self._snapshots = snapshots
        self._compaction_bytes = cfg.compaction_log_bytes
        self._compaction_entries = cfg.compaction_min_entries
        self._apply_fn = apply
        self.max_command_bytes = max_command_bytes
        #: Entries sent per append; always above the largest entry (see MAX_COMMAND_BYTES).
        self.append_batch_bytes = max(cfg.append_batch_bytes,
                                      max_command_bytes + entries.HEAD_SIZE + 1)
        self._clock = clock
        self._wall = wall_clock
        self._rng = rng or random.Random()
        self._membership_cb = on_membership or (lambda _id, _added: None)
        self._state_cb = on_state
        self.apply_errors = 0
        self._votes_counted: set[tuple[int, str]] = set()
        self._reset_floors: dict[Any, int] = {}
        self.pre_vote = PreVote(self, clock, cfg.election_timeout_min)
        self.transfer = LeadershipTransfer(self, clock, 2 * cfg.election_timeout_max)
        self.rejected_commands = 0
        self._commit_sent = 0  # the commit index of the last AppendEntries sent
        self._light_period = cfg.heartbeat_interval
        self._full_tick_at = float("-inf")
        self._unsent_appends = False  # appended to the log since the last AppendEntries
        #: Full engine ticks so far, and light ones (:mod:`.leading`).
        self.full_ticks = self.light_ticks = 0
        self._held: list[Any] = []  # members left out of this append round (see _hold)
        self._members: dict[str, RaftPeer] = {}
        conf = SyncObjConf(
            autoTick=False,
            appendEntriesUseBatch=True,  # appends are sent as described in the docstring
            commandsWaitLeader=False,
            dynamicMembershipChange=True,
            useFork=False,
            journalFile=journal,
            fullDumpFile=snapshots,
            serializer=unused_serializer,
            deserializer=unused_serializer,
            raftMinTimeout=cfg.election_timeout_min,
            raftMaxTimeout=cfg.election_timeout_max,
            appendEntriesPeriod=cfg.heartbeat_interval,
            leaderFallbackTimeout=cfg.leader_fallback_timeout,
            connectionTimeout=max(cfg.election_timeout_max, 3.5),
            logCompactionMinEntries=cfg.compaction_min_entries,
            logCompactionMinTime=cfg.compaction_min_time,
            logCompactionBatchSize=cfg.snapshot_chunk_bytes,
            appendEntriesBatchSizeBytes=self.append_batch_bytes,
            pollerType="select",
            onStateChanged=self._on_state_changed,
        )
        self.acks = RepeatedAcks(clock, lambda: self.term, lambda: int(  # :mod:`.acks`
            self._SyncObj__leaderCommitIndex or 0), cfg.heartbeat_interval)  # type: ignore[has-type]
        transport = EngineTransport(send, self._on_membership, self._hold, self.acks)
        others = [RaftPeer(p) for p in peers if str(p) != self._node_id]
        snapshots.member_factory = RaftPeer
        snapshots.is_stale = lambda last: patches.snapshot_is_stale(self._log_view, last)
        self._env = patches.engine_env(clock, self._rng)
        with self._env:
            super().__init__(
                RaftPeer(self._node_id),
                others,
                conf,
                nodeClass=RaftPeer,
                transport=transport,
            )
            self._poller = NoPoller()
            library_queue: Any = self._SyncObj__commandsQueue  # type: ignore[has-type]
            self._commands = CommandQueue(conf.commandsQueueSize, library_queue)
            self._SyncObj__commandsQueue = self._commands
            self._queued_commands = self._commands.items
            accept_change: Callable[[Any], bool] = self._SyncObj__changeCluster  # type: ignore[has-type]
            self._SyncObj__changeCluster = patches.one_membership_change_at_a_time(
                accept_change,
                lambda: self._journal.last_index + 1,  # where the accepted change goes
                lambda index: setattr(self, "_SyncObj__changeClusterIDx", index),
            )
            self._SyncObj__needLoadDumpFile = False
            self._committed = 0
            send_appends: Callable[[], None] = self._SyncObj__sendAppendEntries  # type: ignore[has-type]

            def sending_appends() -> None:
                self._commit_sent = self.commit_index
                self._unsent_appends = False
                try:
                    send_appends()
                finally:
                    if self._held:
                        self._SyncObj__connectedNodes.update(self._held)
                        self._held.clear()

            self._SyncObj__sendAppendEntries = sending_appends
            if leading is not None:  # the commands it gives go first in each term led
                lead_first(self, lambda: [(b, translated(c)) for b, c in leading()])
            read_log_directly(self, journal)
            wrap_application(self, self._clamp_commit, self._apply_batch)
            if snapshots.stored:
                self._SyncObj__loadDumpFile(clearJournal=False)
            put_log_changes_in_effect(self)

    # -- the replicated state machine ------------------------------------------------------

    @replicated  # type: ignore[untyped-decorator]
    def _apply_entry(self, payload: bytes, stamp: int | None) -> Any:
        """Entries written before commands had their own entry type (see :mod:`.entries`)."""
        return self._apply_batch(payload, int(stamp or 0))

    def _apply_batch(self, batch: bytes, stamp: int) -> Any:
        try:
            return self._apply_fn(batch, stamp)
        except Exception as exc:  # a failing entry must not wedge the node
            if not patches.enabled("safe-apply"):
                raise
            self.apply_errors += 1
            log.exception("applying a committed entry failed; it is skipped on every node")
            return exc

    def submit(self, payload: bytes, callback: Answer) -> None:
        """Propose one command; ``callback(result, outcome)`` runs on commit or failure."""
        if len(payload) > self.max_command_bytes:
            raise ValueError(
                f"command of {len(payload)} bytes exceeds the {self.max_command_bytes}-byte "
                "limit"
            )
        if self.transfer.target is not None:  # pending
            self.transfer.held.append((payload, callback))
            return
        answer = functools.partial(answered, callback)  # translated, without a frame
        if append_leading(self, payload, answer, int(self._wall() * 1000)):
            self._unsent_appends = bool(self._SyncObj__otherNodes)
            return
        with self._env:
            self._applyCommand(entries.encode(payload), answer, None)

    def _applyCommand(
        self, command: bytes, callback: Any, commandType: int | None = None
    ) -> None:
        full = command if commandType is None else _bchr(commandType) + command
        if self._isLeader() and full[:1] not in _ENGINE_TYPES:
            # A proposal (ours, or forwarded by a follower): only commands are accepted,
            # stamped with this leader's clock as they are appended.
            if not entries.is_command(full):
                self.rejected_commands += 1
                log.warning("refused a malformed command proposed to this leader")
                self._fail(callback, FAIL_REASON.REQUEST_DENIED)
                return
            full = entries.stamped(full, int(self._wall() * 1000))
        super()._applyCommand(full, callback, None)

    def _clamp_commit(self) -> None:
        """See :mod:`.durable_commit`: count the leader's copy only once it is durable."""
        if not patches.enabled("durable-leader-commit"):
            return
        matches = self._SyncObj__raftMatchIndex
        proposed = int(self._SyncObj__raftCommitIndex)
        commit = durable_majority_index(
            self._journal.durable_index,
            [int(matches.get(node, 0)) for node in self._SyncObj__otherNodes],
            self._journal.term_at, int(self._SyncObj__raftCurrentTerm), self._committed, proposed)
        if commit != proposed:
            self._SyncObj__raftCommitIndex = commit
            self._SyncObj__leaderCommitIndex = commit
            self._journal.setRaftCommitIndex(commit)

    def _fail(self, callback: Any, reason: int) -> None:
        if callback is None:
            return
        if isinstance(callback, tuple):
            node, request_id = callback
            self._SyncObj__transport.send(
                node, {"type": "apply_command_response", "request_id": request_id, "error": reason}
            )
        else:
            callback(None, reason)

    def _hold(self, node: Any) -> None:
        """No snapshot chunk could go to ``node`` this round: the library would ask for one
        again until its append period ended (never, on a simulated clock). Out of the
        connected set until the round ends, it is skipped instead."""
        connected = self._SyncObj__connectedNodes
        if node in connected:
            connected.discard(node)
            self._held.append(node)

    # -- driving --------------------------------------------------------------------------

    def tick(self) -> None:
        """Advance the engine: a light tick (a leader commits what a majority holds durably,
        both roles apply) while nothing is due since a recent full one; else a full tick."""
        now = self._clock()
        if self.transfer.target is not None:  # pending
            with self._env:
                held = self.transfer.advance()
                if held:  # the pause ended: a leader appends them, a follower forwards them
                    for payload, callback in held:
                        self.submit(payload, callback)
                    self._checkCommandsToApply()
        size = self._journal.size_bytes
        compact = (size >= self._compaction_bytes and size >= self._snapshots.size
                   and not self._snapshots.pending)  # its end compacts; one would follow
        if light_tick(self, now, self._full_tick_at, compact):  # reads no library clock
            if self._SyncObj__raftState == LEADER:
                commit_leading(self, self._journal.term_at)
            elif self._SyncObj__raftCommitIndex > self._SyncObj__raftLastApplied:
                self.apply_committed()
            self.light_ticks += 1
            return
        with self._env:
            self._committed = int(self._SyncObj__raftCommitIndex)  # the clamp's floor
            self._full_tick_at = now
            self.full_ticks += 1
            self.pre_vote.before_tick()
            if compact:
                self.forceLogCompaction()  # however few entries: the bytes are what cost
            if self._snapshots.transmitting:  # its next chunks go every tick, not every beat
                self._SyncObj__newAppendEntriesTime = 0
            self._onTick(0.0)

    def append_proposed(self) -> None:
        """Append the commands proposed since the last tick now, as a tick does last (a
        follower forwards them to its leader), and send what a leader appended."""
        if self._queued_commands or self._unsent_appends:
            with self._env:
                self._checkCommandsToApply()

    def _checkCommandsToApply(self) -> None:
        if self._queued_commands and not self.transfer.pending:
            # The library's loop reads the clock and raises per call; while a transfer
            # is paused, forwarded commands and membership changes wait in the queue.
            last = self._journal.last_index
            super()._checkCommandsToApply()
            if self._journal.last_index != last:
                self._unsent_appends = True
        if self._unsent_appends:
            if self._SyncObj__raftState == LEADER and self._SyncObj__otherNodes:
                self._SyncObj__sendAppendEntries()  # one append for all of them
            self._unsent_appends = False

    @property
    def commit_unsent(self) -> bool:
        """A leader whose commit index passed the one its last AppendEntries carried."""
        return (bool(self._SyncObj__otherNodes)
                and int(self._SyncObj__raftCommitIndex) > self._commit_sent
                and self._SyncObj__raftState == LEADER)

    def send_commit(self) -> None:
        """Tell the followers the commit index now (an AppendEntries, with whatever entries
        they lack), when :attr:`commit_unsent`."""
        if self.commit_unsent:
            with self._env:
                self._SyncObj__sendAppendEntries()

    def force_compaction(self) -> None:
        self.forceLogCompaction()

    def peer_connected(self, peer_id: str, up: bool) -> None:
        self.acks.forget(str(peer_id))
        node = self._member(peer_id) or RaftPeer(peer_id)  # its own: found by identity
        with self._env:
            if up:
                self._SyncObj__transport._onNodeConnected(node)
            else:
                self._SyncObj__transport._onNodeDisconnected(node)

    def _on_membership(self, peer_id: str, added: bool) -> None:
        self._membership_cb(peer_id, added)

    def _on_state_changed(self, old: int, new: int) -> None:
        if new == LEADER:
            self._reset_floors.clear()
        if self._state_cb is not None:
            self._state_cb(old, new)

    # -- membership ---------------------------------------------------------------------

    def add_member(self, peer_id: str, callback: Answer) -> None:
        command = patches.safe_dumps(["add", str(peer_id)])
        with self._env:
            self._applyCommand(command, translated(callback), _MEMBERSHIP)

    def remove_member(self, peer_id: str, callback: Answer) -> None:
        if str(peer_id) == self._node_id:
            callback(None, Outcome.REQUEST_DENIED)
            return
        command = patches.safe_dumps(["rem", str(peer_id)])
        with self._env:
            self._applyCommand(command, translated(callback), _MEMBERSHIP)

    def transfer_leadership(self, peer_id: str | None, callback: Answer) -> None:
        """Hand leadership to ``peer_id`` (or the most caught-up follower); proposals are
        paused meanwhile (see :mod:`.transfer`)."""
        target = None if peer_id is None else RaftPeer(peer_id)
        with self._env:
            if patches.enabled("paused-transfer"):
                self.transfer.start(target, callback)
            else:
                self.transferLeadership(target, translated(callback))
