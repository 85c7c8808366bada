"""Replica: one member's consensus state, driven synchronously (no I/O, no asyncio).

The etcd-raft shape: the caller feeds messages (:meth:`Replica.receive`), proposes
operations (:meth:`Replica.propose`) and calls :meth:`Replica.step`, which flushes the
proposals gathered since the last step into replicated batches, ticks the engine,
makes the journal durable (one fsync for everything the step wrote) and only then
returns a :class:`Ready`: messages to send, state-machine events and completed
proposals. Nothing leaves a node before it is on disk. A driver that writes and fsyncs
itself calls the two halves of a step, :meth:`Replica.prepare` and :meth:`Replica.tick`.

Every proposal carries a session sequence number, so re-submitting it is always
safe. A proposal is retried until it commits; its *waiter* has a deadline. At the
deadline a proposal that cannot have been applied fails cleanly; one whose outcome is
unknown is either abandoned (pushes: the outcome is reported as unknown) or kept
alive as an orphan whose late result is handed to ``on_orphan`` (pops use that to
return an element nobody received).
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from typing import Any

from .batch import encode_batch, encode_checked_op, remember, with_seq
from .codec import frame_limit
from .engine import LEADER, STATE_NAMES, RaftEngine
from .errors import ProposalRejected
from .fsm import FSM
from .journal import DurableJournal
from .leading import unlogged
from .outcome import MAYBE_APPLIED, Answer, Outcome
from .proposals import Proposal, ReplicaConfig, commit_deadline
from .ready import NOTHING, Completion, Ready
from .rejoin import check_continues
from .replica_waiters import ReplicaWaiters
from .snapshot import SnapshotError, SnapshotStore
from .values import plain

log = logging.getLogger(__name__)


def check_stored_state(fsm: Any, state: Any) -> Any:
    """``state`` prepared (:meth:`~.fsm.FSM.prepare`); refuse a stored snapshot whose
    state does not restore: the engine would log the failure and never apply again."""
    try:
        return fsm.prepare(state)
    except Exception as exc:
        raise SnapshotError(f"the stored state does not restore: {exc}") from None


class Replica(ReplicaWaiters):
    """A member's engine, journal, state machine (``fsm``) and proposal book-keeping;
    failing its waiters at their deadline or on quorum loss is in
    :class:`~.replica_waiters.ReplicaWaiters`."""

    def __init__(
        self,
        node_id: str,
        peers: list[str],
        *,
        journal: DurableJournal,
        snapshot_path: str,
        fsm: FSM,
        config: ReplicaConfig | None = None,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        rng: random.Random | None = None,
    ) -> None:
        self.config = config or ReplicaConfig()
        self.clock = clock
        self.rng = rng or random.Random()
        self.fsm = fsm
        self.journal = journal
        self.snapshots = SnapshotStore(
            journal._disk,
            snapshot_path,
            capture=lambda: fsm.capture(deferred=True),
            prepare=fsm.prepare,
            install=fsm.install,
            chunk_size=self.config.engine.snapshot_chunk_bytes,
            clock=clock,
        )
        self.snapshots.queued = lambda node: len(self._ready.messages.get(node.id, ()))
        existing = self.snapshots.read()
        if existing is not None:
            prepared = check_stored_state(fsm, existing["state"])
            check_continues(journal, existing)
            journal.drop_before(existing["prev"][1])
            self.snapshots.keep_prepared(existing, prepared)
            del existing, prepared
        self._ready = Ready()
        self.engine = RaftEngine(
            node_id,
            peers,
            journal=journal,
            snapshots=self.snapshots,
            apply=fsm.apply,
            send=self._send,
            config=self.config.engine,
            max_command_bytes=self.config.max_command_bytes,
            clock=clock,
            wall_clock=wall_clock,
            rng=self.rng,
            on_membership=self._on_membership,
            on_state=self._on_state,
            leading=self._leading,
        )
        #: Per op code: its name and the message limit its last argument obeys (or None).
        self._op_kinds: dict[int, tuple[str, int | None, int | None]] = {}
        self._max_op_bytes = self.config.max_command_bytes - 1024
        self.session = self.rng.getrandbits(62) + 1
        self._next_seq = 1
        self._unresolved: dict[int, Proposal] = {}
        self._queued: list[Proposal] = []
        self._quorum_lost_at: float | None = None
        self._led_at = clock()
        self.leader_changes = 0
        self.proposals = 0
        self.batches = 0

    # -- input ----------------------------------------------------------------------------

    def propose(
        self,
        code: int,
        args: list[Any],
        *,
        timeout: float,
        on_done: Completion,
        on_orphan: Callable[[Any], None] | None = None,
        encoded: bytes | None = None,
    ) -> Proposal:
        """Queue one operation for the next step's batch; ``encoded`` is what
        :meth:`encode` gave for ``code`` and ``args`` (encoded here when ``None``).

        Raises :class:`~lazily_queue.errors.UnsupportedValue` for a value replicas would
        refuse to decode and :class:`~lazily_queue.errors.MessageTooLarge` for a message
        (of an op the state machine says carries one) over ``max_message_bytes``, or an op
        over the command limit.
        """
        deadline = commit_deadline(self.clock(), timeout)
        seq = self._next_seq
        encoded = self._encode(seq, code, args) if encoded is None else with_seq(encoded, seq)
        self._next_seq += 1
        p = Proposal(seq, code, args, encoded, deadline, on_done, on_orphan)
        self._unresolved[seq] = p
        self._queued.append(p)
        self.proposals += 1
        return p

    def encode(self, code: int, args: list[Any]) -> bytes:
        """The op for :meth:`propose`'s ``encoded``; raises what :meth:`propose` would
        refuse ``args`` with. Queues nothing."""
        return self._encode(0, code, args)

    def _encode(self, seq: int, code: int, args: list[Any]) -> bytes:
        kind = self._op_kinds.get(code)
        if kind is None:
            limit = self.config.max_message_bytes
            kind = self._op_kinds[code] = (
                self.fsm.op_name(code), limit if self.fsm.carries_message(code) else None,
                limit if self.fsm.bounds_containers(code) else None)
        return encode_checked_op(seq, code, args, max_bytes=self._max_op_bytes, name=kind[0],
                                 message_limit=kind[1], container_limit=kind[2])

    def cancel(self, p: Proposal) -> None:
        """The waiter is gone: drop ``p`` if it cannot have been applied, else orphan it."""
        if p.done:
            return
        if not p.in_flight and not p.maybe_applied:
            self._finish(p)
        else:
            p.on_done = None

    def receive(self, peer_id: str, message: dict[str, Any]) -> None:
        self.engine.deliver(peer_id, message)

    def peer_connected(self, peer_id: str, up: bool) -> None:
        self.engine.peer_connected(peer_id, up)

    # -- the step -------------------------------------------------------------------------

    def step(self, *, sync: bool = True) -> Ready:
        """Advance: :meth:`prepare`, then :meth:`tick`, as one Ready. With ``sync=False``
        nothing is written: the caller must write the journal (``journal.write()``) and
        fsync it before releasing what the returned Ready holds (see
        :class:`~.pipeline.CommitPipeline`)."""
        self._prepare()
        return self.tick(sync=sync)

    def prepare(self) -> Ready:
        """The first half of a step: waiters past their deadline fail, the proposals
        gathered since the last step become batches, and a leader appends them to its
        log (a follower forwards them). Written and fsynced before :meth:`tick`, a
        leader's appends count at once: that tick may commit them. The Ready obeys the
        same rules as :meth:`step`'s."""
        self._prepare()
        return self._take_ready()

    def tick(self, *, sync: bool = False) -> Ready:
        """The second half of a step: the engine ticks (commits, applies, heartbeats,
        elections). ``sync`` as in :meth:`step`."""
        self.engine.tick()
        self._ready.events.extend(self.fsm.drain_events())
        if sync and self.journal.needs_sync:
            self.journal.sync()
        return self._take_ready()

    @property
    def commit_unsent(self) -> bool:
        """This leader committed past the index its followers were last told."""
        return bool(self.engine.commit_unsent)

    def publish_commit(self) -> Ready:
        """Tell the followers the commit index now (a driver calls this once no step is
        about to run: a step that appends carries it anyway). Same rules as :meth:`step`."""
        self.engine.send_commit()
        return self._take_ready()

    def _prepare(self) -> None:
        now = self.clock()
        if self._quorum_lost_at is not None or self.engine._SyncObj__raftState != LEADER:
            self._check_quorum(now)  # a leader that had quorum keeps it
        if self._unresolved:
            self._expire(now)
        if self._queued:
            self._flush(now)
        self.engine.append_proposed()

    def _take_ready(self) -> Ready:
        """What the replica produced since the last take; an empty output is the shared
        :data:`~.ready.NOTHING` (most halves of a step produce nothing)."""
        ready = self._ready
        if not (ready.messages or ready.completions or ready.events or ready.orphans
                or ready.membership):
            return NOTHING
        self._ready = Ready()
        return ready

    def _flush(self, now: float) -> None:
        batch: list[Proposal] = []
        size = 0
        for p in self._queued:
            if p.done or p.in_flight:
                continue
            if p.retry_at > now:
                continue
            if batch and size + len(p.encoded) > self.config.max_batch_bytes:
                self.engine.submit(*self._command(batch, now))
                batch, size = [], 0
            batch.append(p)
            size += len(p.encoded)
        if batch:
            self.engine.submit(*self._command(batch, now))
            if len(batch) == len(self._queued):  # all of them went
                self._queued = []
                return
        waiting: dict[int, Proposal] = {}
        for p in self._queued:
            if not p.done and not p.in_flight:
                waiting[p.seq] = p
        self._queued = list(waiting.values())

    def _command(self, batch: list[Proposal], now: float) -> tuple[bytes, Answer]:
        """``batch``'s command and callback, its proposals in flight from ``now``."""
        encoded: list[bytes] = []
        attempts: list[int] = []
        ops: list[list[Any]] | None = []
        deadline = now + self.config.attempt_timeout
        for p in batch:
            encoded.append(p.encoded)
            p.in_flight = True
            p.attempts += 1
            p.attempt_deadline = deadline
            attempts.append(p.attempts)
            if ops is not None and plain(p.args):
                ops.append([p.seq, p.code, *p.args])
            else:
                ops = None
        session, floor = self.session, min(self._unresolved, default=self._next_seq)
        payload = encode_batch(session, floor, encoded)
        if ops is not None:  # applied here, it needs no decoding
            remember(payload, session, floor, ops)
        self.batches += 1
        return payload, functools.partial(self._on_result, batch, attempts)

    def _leading(self) -> list[tuple[bytes, Answer]]:
        """The command of the state machine's :meth:`~.fsm.FSM.leading_ops` not logged yet
        (``[]``: none), each op waiting an attempt's timeout to commit, its result dropped."""
        batch = [self.propose(code, args, timeout=self.config.attempt_timeout,
                              on_done=lambda _result, _error: None)
                 for code, args in unlogged(self.fsm.leading_ops(), self.journal,
                                            self.engine.last_applied)]
        return [self._command(batch, self.clock())] if batch else []  # its queue drops them

    def _on_result(
        self, batch: list[Proposal], attempts: list[int], result: Any, outcome: Outcome
    ) -> None:
        if outcome is Outcome.SUCCESS:
            if isinstance(result, list) and len(result) == len(batch):
                for p, r in zip(batch, result, strict=True):
                    self._resolve(p, r)
                return
            failure = ProposalRejected(f"the state machine refused the batch: {result}",
                                       applied=False)
            for p in batch:
                self._fail(p, failure)
            return
        now = self.clock()
        for p, attempt in zip(batch, attempts, strict=True):
            if p.done or not p.in_flight or p.attempts != attempt:
                continue
            p.in_flight = False
            p.last_failure = outcome.value
            if outcome in MAYBE_APPLIED:
                p.maybe_applied = True
            if outcome is Outcome.REQUEST_DENIED:
                self._fail(p, ProposalRejected("the leader refused the command",
                                               applied=None if p.maybe_applied else False))
                continue
            p.retry_at = now + self.config.retry_delay * (1 + self.rng.random())
            self._queued.append(p)

    def _resolve(self, p: Proposal, result: Any) -> None:
        if p.done:
            return
        if p.on_done is not None:
            self._ready.completions.append((p.on_done, result, None))
        elif p.on_orphan is not None:
            self._ready.orphans.append((p.on_orphan, result))
        self._finish(p)

    def _fail(self, p: Proposal, error: BaseException) -> None:
        if p.done:
            return
        if p.on_done is not None:
            self._ready.completions.append((p.on_done, None, error))
        self._finish(p)

    def _finish(self, p: Proposal) -> None:
        p.done = True
        p.in_flight = False
        self._unresolved.pop(p.seq, None)

    # -- engine callbacks ------------------------------------------------------------------

    def _send(self, peer_id: str, message: dict[str, Any]) -> None:
        self._ready.messages.setdefault(peer_id, []).append(message)

    def _on_membership(self, peer_id: str, added: bool) -> None:
        self._ready.membership.append((peer_id, added))

    def _on_state(self, old: int, new: int) -> None:
        if LEADER in (old, new):
            self.leader_changes += 1
            self._led_at = self.clock()

    # -- introspection ----------------------------------------------------------------------

    @property
    def node_id(self) -> str:
        return self.engine.node_id

    @property
    def pending(self) -> int:
        return len(self._unresolved)

    @property
    def max_frame_bytes(self) -> int:
        """The largest Raft frame this member accepts from a peer."""
        return frame_limit(self.config.max_command_bytes, self.engine.append_batch_bytes)

    def status(self) -> dict[str, Any]:
        """The member's Raft state; ``leader`` is None on a member that has not heard
        from the leader it knows for two election timeouts (or leader fallback
        timeouts, the longer): that leader is likely gone."""
        e = self.engine
        leader = e.leader_id
        if (leader is not None and not e.is_leader
                and not e.pre_vote.heard_within(self.leader_window)):
            leader = None
        return {
            "node": e.node_id,
            "state": STATE_NAMES[e.state],
            "leader": leader,
            "term": e.term,
            "commit_index": e.commit_index,
            "last_applied": e.last_applied,
            "log_first_index": self.journal.first_index,
            "log_last_index": self.journal.last_index,
            "members": e.members,
            "connected": sorted(e.connected),
            "match_index": e.match_index,
            "has_quorum": self._has_quorum(),
            "pending_proposals": len(self._unresolved),
            "snapshots_taken": self.snapshots.taken,
            "snapshots_installed": self.snapshots.installed,
            "snapshots_refused_stale": self.snapshots.refused_stale,
            "apply_errors": e.apply_errors,
        }
