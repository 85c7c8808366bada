"""A leader's fast path: it appends what is proposed at once and, between full engine
ticks, commits what a majority holds durably without one.

Its proposals need no command queue: each is stamped and appended to its log as it is
submitted, behind whatever the queue still holds (commands forwarded by followers), and
the step sends one AppendEntries for all of them.

A full tick (elections, heartbeats, leader fallback, compaction, PySyncObj's timers)
runs at most once per ``period`` seconds for a leader, or sooner when a heartbeat is
due (its AppendEntries go out when they would have): in between, its tick only moves
its commit index to the highest entry of its term that a majority holds durably (its
own copy counted by its journal's durable index, a follower's by its acknowledged match
index) and applies up to it, exactly as the full tick's leader branch and the
durable-commit clamp (:mod:`.durable_commit`) would. A commit then costs
no more than counting: a reply from a follower commits in the step it starts. The other
timers run with the next full tick, at most ``period`` seconds later.

A follower's ticks are light by the same rule, and only apply what is committed, until
its election deadline passes (a full tick starts the pre-vote round or election at
once) or a command waits to be forwarded to the leader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import entries, patches
from .batch import CommandError, decode_command
from .durable_commit import durable_majority_index
from .prevote import LEADER


def append_leading(engine: Any, batch: bytes, callback: Any, stamp: int) -> bool:
    """Append a command carrying ``batch`` (stamped ``stamp``) to a leader's log now,
    ``callback`` waiting for its commit; False (nothing done) when the engine is not the
    leader or commands wait in its queue."""
    if engine._queued_commands or engine._SyncObj__raftState != LEADER:
        return False
    _append(engine, batch, callback, stamp)
    return True


def _append(engine: Any, batch: bytes, callback: Any, stamp: int) -> None:
    journal = engine._journal
    index = journal.last_index + 1
    term = engine._SyncObj__raftCurrentTerm
    journal.add(entries.encode(batch, stamp), index, term)
    engine._SyncObj__commandsWaitingCommit[index].append((term, callback))


#: The largest batch :func:`logged_codes` reads: a leader's few ops of its own.
SMALL_BATCH = 64


def unlogged(ops: list[tuple[int, list[Any]]], journal: Any, after: int
             ) -> list[tuple[int, list[Any]]]:
    """The leading ``ops`` (``(code, args)``, markers: :meth:`~.fsm.FSM.leading_ops`)
    whose code no small command batch of ``journal`` past index ``after`` holds."""
    if not ops:
        return ops
    logged = logged_codes(journal, after)
    return [op for op in ops if op[0] not in logged]


def logged_codes(journal: Any, after: int) -> set[int]:
    """The op codes of the small command batches (:data:`SMALL_BATCH` bytes at most, as
    the ops a leader appends first in its term are) ``journal`` holds past index
    ``after``."""
    codes: set[int] = set()
    start = max(0, after + 1 - journal.first_index)
    for entry, _index, _term in journal[start:len(journal)]:
        command = (entries.command_of(entry)
                   if len(entry) <= entries.HEAD_SIZE + SMALL_BATCH else None)
        if command is not None:
            try:
                codes.update(op[1] for op in decode_command(command[1])[2])
            except CommandError:
                continue
    return codes


def lead_first(engine: Any, first: Callable[[], list[tuple[bytes, Any]]]) -> None:
    """Have ``engine`` append the commands ``first()`` gives (each a batch and the
    callback waiting for its commit), stamped with its wall clock, as it becomes leader:
    right after the entry starting its term, before any command proposed or forwarded
    in the term, and sent with the next AppendEntries of the step."""
    become_leader = engine._SyncObj__onBecomeLeader

    def becoming_leader() -> None:
        become_leader()
        commands = first()
        for batch, callback in commands:
            _append(engine, batch, callback, int(engine._wall() * 1000))
        if commands:
            engine._unsent_appends = bool(engine._SyncObj__otherNodes)

    engine._SyncObj__onBecomeLeader = becoming_leader


def light_tick(engine: Any, now: float, full_tick_at: float, compact: bool) -> bool:
    """Whether a tick at ``now`` may only commit (a leader) and apply: the last full tick
    (at ``full_tick_at``) is recent, no heartbeat is due (a leader), no election nor
    pre-vote round and no command to forward (a follower, see
    :meth:`~.prevote.PreVote.quiet`), and no snapshot or compaction (``compact``: one is
    due by size) waits for a full one (a snapshot written on the worker thread waits
    only for its end)."""
    snapshots = engine._snapshots
    if (now - full_tick_at >= engine._light_period or compact or snapshots.transmitting
            or engine._SyncObj__forceLogCompaction):
        return False
    if engine._SyncObj__raftState == LEADER:
        if engine._SyncObj__otherNodes and now > engine._SyncObj__newAppendEntriesTime:
            return False
    elif (engine._queued_commands or not engine._SyncObj__onReadyCalled
          or not engine.pre_vote.quiet(now)):
        return False
    writer = snapshots.writer
    if writer.pending:
        return bool(writer.running)
    return bool(len(engine._journal) <= engine._compaction_entries)


def commit_leading(engine: Any, term_at: Any) -> None:
    """Commit and apply what a majority of a leader's cluster holds durably (the caller
    checked that the engine leads)."""
    commit = engine._SyncObj__raftCommitIndex
    journal = engine._journal
    last = journal.last_index
    # What the full tick's leader branch computes (the highest entry of this term that a
    # majority holds) lowered by the durable-commit clamp at once: this leader's copy
    # counts up to its journal's durable index, so the clamp has nothing left to lower
    # and the entries apply without it.
    if last > commit:
        own = journal.durable_index if patches.enabled("durable-leader-commit") else last
        others = engine._SyncObj__otherNodes
        term = engine._SyncObj__raftCurrentTerm
        if not others:
            proposed = own if own < last else last
            if proposed <= commit or term_at(proposed) != term:
                proposed = commit
        else:
            matches = engine._SyncObj__raftMatchIndex
            proposed = durable_majority_index(
                own, [int(matches.get(node, 0)) for node in others], term_at, int(term),
                commit, last)
        if proposed > commit:
            engine._SyncObj__raftCommitIndex = commit = proposed
            journal.setRaftCommitIndex(proposed)
    engine._SyncObj__leaderCommitIndex = commit
    if commit > engine._SyncObj__raftLastApplied:
        engine.apply_committed()
