"""The cluster configuration a member runs with: the latest one in its log.

Raft puts a membership change into effect as soon as a member has the entry in its log,
committed or not (thesis §4.1), and PySyncObj does so when a leader accepts a change and
when a follower appends one. On a restart, though, it starts from the members it was
given and its snapshot's, and takes up the changes in its journal only as it applies
them, which needs a commit, which may need an election: a member that founded a cluster
alone and added the others restarts believing it is alone (its saved commit index is
older than its journal), elects itself with its own vote, commits on its own, then
overwrites what the real majority committed meanwhile. And a committed change applied
again re-adds a member that a later change, already in effect, removed.

With the ``membership-from-log`` engine patch:

- :func:`put_log_changes_in_effect` runs when the engine starts: every membership
  change in the log after the snapshot takes effect, in log order;
- :func:`in_effect_already` tells the apply path to skip a committed membership entry:
  it has been in effect since it was loaded, proposed or appended (a truncated one is
  undone by PySyncObj's own truncation, as before).
"""

from __future__ import annotations

from typing import Any

from . import patches

PATCH = "membership-from-log"
#: PySyncObj's entry type of a membership change (the first byte of its command).
MEMBERSHIP = 2
_MEMBERSHIP_BYTE = bytes([MEMBERSHIP])


def put_log_changes_in_effect(engine: Any) -> int:
    """Put every membership change in ``engine``'s log after its applied index into
    effect, in order; returns how many there were (none with the patch off)."""
    if not patches.enabled(PATCH):
        return 0
    applied = int(engine._SyncObj__raftLastApplied)
    changes = 0
    for command, index, _term in engine._SyncObj__raftLog[:]:
        if index <= applied or command[:1] != _MEMBERSHIP_BYTE:
            continue
        request = engine._SyncObj__parseChangeClusterRequest(command)
        if request is not None:
            engine._SyncObj__doChangeCluster(request)
            changes += 1
    return changes


def in_effect_already(command: bytes) -> bool:
    """Whether applying the committed entry ``command`` must change nothing: a
    membership change, in effect since the member loaded, accepted or appended it."""
    return command[:1] == _MEMBERSHIP_BYTE and patches.enabled(PATCH)
