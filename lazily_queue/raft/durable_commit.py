"""A leader counts its own copy of an entry only once that copy is durable.

The leader writes its log in parallel with replication (Raft thesis §10.2.1): its
AppendEntries leave before its own fsync, so followers append and fsync at the same
time as the leader. PySyncObj counts the leader towards every majority unconditionally;
here its commit index is clamped, before anything is applied or sent, to the highest
index of the current term that a majority holds *durably*: followers count by their
acknowledged match index (a follower acknowledges only after its fsync), the leader by
its journal's durable index. "Acknowledged = fsynced on a majority" stays true, and a
cluster of one commits exactly when its fsync completes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def durable_majority_index(
    own_durable: int, follower_matches: Iterable[int], term_at: Callable[[int], int | None],
    term: int, committed: int, proposed: int,
) -> int:
    """The commit index to keep: never below ``committed``, never above ``proposed`` (what
    PySyncObj computed), and only up to an entry of ``term`` held durably by a majority."""
    if proposed <= committed:
        return committed
    positions = sorted([own_durable, *follower_matches], reverse=True)
    held = positions[len(positions) // 2]  # the highest index a majority holds
    candidate = min(proposed, held)
    if candidate <= committed or term_at(candidate) != term:
        return committed
    return candidate
