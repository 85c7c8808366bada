"""A member alone in its cluster, and leading it, appends what is proposed at once and
commits what its journal holds durably without a full engine tick.

Its proposals need no command queue (no leader to forward them to, no AppendEntries to
batch them into): each is stamped and appended to its log as it is submitted, behind
whatever the queue still holds.

A full tick (elections, heartbeats, leader fallback, compaction, PySyncObj's timers)
has nothing to do for a leader with no other member, beyond committing and applying:
with no follower there is no AppendEntries to send and no match index to count. So
while its last full tick is recent (less than ``period`` seconds ago), such a member's
tick only moves its commit index to the highest entry of its term that is durable and
applies up to it, exactly as the full tick's leader branch and the durable-commit clamp
(:mod:`.durable_commit`) would. The timers still run with the next full tick, at most
``period`` seconds later.
"""

from __future__ import annotations

from typing import Any

from . import entries


def append_alone(engine: Any, batch: bytes, callback: Any, stamp: int) -> bool:
    """Append a command carrying ``batch`` (stamped ``stamp``) to a lone leader's log now,
    ``callback`` waiting for its commit; False (nothing done) when the engine is not a
    lone leader or commands wait in its queue."""
    if engine._SyncObj__otherNodes or engine._commands or not engine._isLeader():
        return False
    index = int(engine._SyncObj__getCurrentLogIndex()) + 1
    term = engine._SyncObj__raftCurrentTerm
    engine._SyncObj__raftLog.add(entries.encode(batch, stamp), index, term)
    engine._SyncObj__commandsWaitingCommit[index].append((term, callback))
    return True


def commit_alone(engine: Any, durable_index: int, term_at: Any) -> bool:
    """Commit and apply what a lone leader holds durably; False (nothing done) when the
    engine is not a lone leader or nothing durable awaits its commit."""
    if engine._SyncObj__otherNodes or not engine._isLeader():
        return False
    commit = int(engine._SyncObj__raftCommitIndex)
    if durable_index <= commit or term_at(durable_index) != int(
            engine._SyncObj__raftCurrentTerm):
        return False
    # What the full tick's leader branch computes for a lone leader (its log's last entry
    # of this term); the durable-commit clamp, run before applying, lowers it to what
    # is durable.
    last = int(engine._SyncObj__getCurrentLogIndex())
    if term_at(last) == int(engine._SyncObj__raftCurrentTerm):
        engine._SyncObj__raftCommitIndex = last
        engine._journal.setRaftCommitIndex(last)
    engine._SyncObj__leaderCommitIndex = engine._SyncObj__raftCommitIndex
    engine._SyncObj__applyLogEntries()
    return True
