"""Message delivery into PySyncObj through the per-engine patches (see :mod:`.patches`).

:class:`PatchedSyncObj` is the layer of :class:`~.engine.RaftEngine` that routes each
decoded message from a member to the library, wrapped by the patch that fixes the
library's handling of that message kind, and that keeps a wiped member out of elections
until its log reaches its floor (:mod:`.rejoin`). AppendEntries are taken from any
leader, listed in this member's configuration or not, as Raft learns configuration
changes from the log; every other message from a non-member is dropped.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from pysyncobj import SyncObj

from . import patches, rejoin
from .adapters import RaftPeer

log = logging.getLogger(__name__)

_VOTE_ANSWERS = frozenset({"response_vote", "pre_vote_response"})
_VOTES = _VOTE_ANSWERS | {"request_vote", "pre_vote"}


class PatchedSyncObj(SyncObj):  # type: ignore[misc]
    """PySyncObj with patched message delivery; the engine sets up the attributes used
    here (journal, snapshots, pre-vote, the patches' bookkeeping)."""

    _members: dict[str, RaftPeer]

    def deliver(self, peer_id: str, message: dict[str, Any]) -> None:
        """Hand one decoded message from ``peer_id`` to the consensus logic."""
        node = self._member(peer_id)
        if node is None:
            if message.get("type") != "append_entries":
                return
            # A leader this member's configuration does not list yet (it learns the
            # configuration from the log, as from any leader; other messages from
            # non-members are dropped).
            node = RaftPeer(peer_id)
        with self._env:
            kind = message["type"]
            if kind in _VOTES and self.rejoining:
                floor = rejoin.floor_of(self._journal.meta)
                last = (message.get("last_log_term", -1), message.get("last_log_index", -1))
                if kind in _VOTE_ANSWERS or floor is None or last < floor:
                    return
            if kind == "pre_vote":
                self.pre_vote.on_request(node, message)
            elif kind == "pre_vote_response":
                self.pre_vote.on_response(peer_id, message)
            elif kind == "next_node_idx":
                patches.next_index_answer(
                    self._SyncObj__raftNextIndex,
                    self._reset_floors,
                    node,
                    message,
                    lambda: self._SyncObj__onMessageReceived(node, message),
                )
            elif kind == "response_vote":
                patches.count_each_vote_once(
                    self._votes_counted,
                    self._SyncObj__raftCurrentTerm,
                    peer_id,
                    message,
                    lambda: self._SyncObj__onMessageReceived(node, message),
                )
            elif kind == "append_entries" and "prevLogIdx" not in message:
                self.pre_vote.on_append_entries(node, message)
                patches.snapshot_messages_commit_nothing(
                    self._log_view,
                    message,
                    lambda: self._snapshots.installed,
                    lambda m: self._SyncObj__onMessageReceived(node, m),
                )
            elif kind == "append_entries":
                self.pre_vote.on_append_entries(node, message)
                patches.append_entries_without_spurious_truncation(
                    self._log_view,
                    self._SyncObj__raftCurrentTerm,
                    message,
                    lambda m: self._SyncObj__onMessageReceived(node, m),
                )
            else:
                self._SyncObj__onMessageReceived(node, message)

    def _member(self, peer_id: str) -> RaftPeer | None:
        """The library's own object for member ``peer_id`` (its dict lookups then match
        by identity), or ``None`` when it is not a member."""
        others = self._SyncObj__otherNodes
        node = self._members.get(peer_id)
        if node is None or node not in others:
            self._members = {str(n.id): n for n in others}
            node = self._members.get(peer_id)
        return node

    @property
    def rejoining(self) -> bool:
        """Whether this member was wiped and its log is still below its floor: it collects
        no votes and grants one only to a candidate whose log reaches the floor."""
        floor = rejoin.floor_of(self._journal.meta)
        if floor is None:
            return False
        last = self._journal[-1]
        if (last[2], last[1]) < floor:
            return True
        self._journal.set_meta(rejoin.FLOOR_KEY, None)
        log.info("node %s caught up to its floor %s; it votes again", self._node_id, floor)
        return False

    @functools.cached_property
    def _log_view(self) -> patches.LogView:
        return patches.LogView(
            term_at=self._journal.term_at,
            last_index=lambda: self._journal.last_index,
            commit_index=lambda: int(self._SyncObj__raftCommitIndex),
            set_commit_index=self._set_commit_index,
            suppress_truncation=self._journal.mask_tail_after,
        )

    def _set_commit_index(self, index: int) -> None:
        self._SyncObj__raftCommitIndex = index
        self._journal.setRaftCommitIndex(index)
