"""The read-only view of a :class:`~lazily_queue.raft.engine.RaftEngine`: its id, Raft
state, leader, term, indexes and members, read from PySyncObj's state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class EngineView:
    """:class:`~lazily_queue.raft.engine.RaftEngine`'s introspection properties.

    Only annotations are declared here for what they read: the engine and PySyncObj
    define them (a stub here would shadow the library's methods)."""

    _node_id: str
    _isLeader: Callable[[], Any]
    _getLeader: Callable[[], Any]
    _SyncObj__raftState: Any
    _SyncObj__raftLeader: Any
    _SyncObj__raftCurrentTerm: Any
    _SyncObj__raftCommitIndex: Any
    _SyncObj__raftLastApplied: Any
    _SyncObj__raftMatchIndex: Any
    _SyncObj__otherNodes: Any
    _SyncObj__connectedNodes: Any

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def state(self) -> int:
        return int(self._SyncObj__raftState)

    @property
    def is_leader(self) -> bool:
        return bool(self._isLeader())

    @property
    def leader_id(self) -> str | None:
        leader = self._getLeader()
        return None if leader is None else str(leader.id)

    @property
    def term(self) -> int:
        return int(self._SyncObj__raftCurrentTerm)

    @property
    def commit_index(self) -> int:
        return int(self._SyncObj__raftCommitIndex)

    @property
    def last_applied(self) -> int:
        return int(self._SyncObj__raftLastApplied)

    @property
    def members(self) -> list[str]:
        return sorted([self._node_id] + [str(n.id) for n in self._SyncObj__otherNodes])

    @property
    def shape(self) -> tuple[object, ...]:
        """Equal between two reads unless the leader, the term, the members or the linked
        members changed in between (cheap, for watchers that look after every step)."""
        return (self._SyncObj__raftLeader, self._SyncObj__raftCurrentTerm,
                frozenset(self._SyncObj__otherNodes), frozenset(self._SyncObj__connectedNodes))

    @property
    def match_index(self) -> dict[str, int]:
        return {str(n.id): int(i) for n, i in self._SyncObj__raftMatchIndex.items()}

    @property
    def connected(self) -> set[str]:
        return {str(n.id) for n in self._SyncObj__connectedNodes}
