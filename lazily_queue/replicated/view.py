"""ReadView: what readers may see of a replica's applied state, and nothing to change it.

Storages, the node's maintenance, status and metrics, and the simulator read through
it. It shows the state as applied on this replica (a follower may trail the leader)
and follows a snapshot install. The objects it returns are the live cores: read them,
never mutate them (every change goes through the log).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.dedup import DedupLimits
from ..core.expiry import Expiry
from ..core.fifo import Fifo
from ..core.headers import Headers, OffsetHeaders
from ..core.topic import TopicCore
from .session_popped import SessionRecord
from .state_machine import StateMachine
from .table_sizes import table_sizes
from .work_queues import WorkState


class ReadView:
    """Read-only access to one :class:`StateMachine`."""

    __slots__ = ("_sm",)

    def __init__(self, state_machine: StateMachine) -> None:
        self._sm = state_machine

    def queue(self, name: str) -> Fifo[Any] | None:
        return self._sm.queues.get(name)

    def topic(self, name: str) -> TopicCore[Any] | None:
        return self._sm.topics.get(name)

    @property
    def topic_headers(self) -> Mapping[str, OffsetHeaders]:
        return self._sm.topic_headers

    @property
    def work_headers(self) -> Mapping[str, OffsetHeaders]:
        return self._sm.work_headers

    def topic_headers_of(self, name: str, offset: int) -> Headers | None:
        """The headers of topic ``name``'s element at ``offset``, or ``None``."""
        table = self._sm.topic_headers.get(name)
        if table is None or table.owner is not self._sm.topics.get(name):
            return None
        return table.get(offset)

    def work_headers_of(self, name: str, item_id: int) -> Headers | None:
        """The headers of work queue ``name``'s item ``item_id``, or ``None``."""
        table = self._sm.work_headers.get(name)
        if table is None or table.owner is not self._sm.work_queues.get(name):
            return None
        return table.get(item_id)

    def work_queue(self, name: str) -> WorkState | None:
        return self._sm.work_queues.get(name)

    @property
    def expiry(self) -> Mapping[tuple[str, str], Expiry]:
        """Expiry rules and deadlines by ``(kind, name)`` (:mod:`.expiry`)."""
        return self._sm.expiry

    def expiry_due(self, now: int) -> list[tuple[str, str]]:
        """``(name, kind)`` of the cells with an element expired at ``now`` (ms) at their
        head (:func:`.expiry.due`)."""
        from .expiry import due

        return due(self._sm, now)

    def queues_due(self, now: int) -> list[str]:
        """The queues holding a delayed element due at ``now`` (ms)
        (:func:`.queue_options.due`)."""
        from .queue_options import due

        return due(self._sm, now)

    def expiry_counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        """``{(kind, name): (expired, skipped)}`` of every cell with expiry state."""
        return {key: (e.expired, e.skipped) for key, e in self._sm.expiry.items()}

    def expired(self, kind: str, name: str) -> int:
        """Elements of a cell that expired undelivered (0 without expiry rules)."""
        found = self._sm.expiry.get((kind, name))
        return 0 if found is None else found.expired

    @property
    def queues(self) -> Mapping[str, Fifo[Any]]:
        return self._sm.queues

    @property
    def topics(self) -> Mapping[str, TopicCore[Any]]:
        return self._sm.topics

    @property
    def work_queues(self) -> Mapping[str, WorkState]:
        return self._sm.work_queues

    def ephemeral_owners_stale(self, now: int, grace_ms: int) -> bool:
        """Whether a client session owning ephemeral subscriptions was not refreshed
        within ``grace_ms`` of ``now`` (ms) (:mod:`.ephemeral_owners`)."""
        return next(self._sm.ephemeral_owners.stale(now - grace_ms), None) is not None

    def ephemeral_owner(self, session: int) -> bool:
        """Whether client ``session`` owns ephemeral subscriptions."""
        return session in self._sm.ephemeral_owners.alive

    @property
    def groups(self) -> Mapping[str, Mapping[str, str]]:
        """Consumer groups: topic -> {group: the name of its work queue}."""
        return self._sm.groups

    def address(self, node_id: str) -> str | None:
        """The replicated address of member ``node_id`` (set by ``add_member``)."""
        return self._sm.addresses.get(node_id)

    @property
    def member_pages(self) -> Mapping[str, str]:
        """Where each member serves its status page (members announce it themselves)."""
        return self._sm.member_pages

    @property
    def now(self) -> int:
        """The leader's time stamp on the last applied batch (ms since the Unix epoch)."""
        return self._sm.now

    @property
    def applied_ops(self) -> int:
        return self._sm.applied_ops

    @property
    def tapped(self) -> int:
        """How many applied ops the state machine's tap reported (clients' mirrors)."""
        return self._sm.tapped

    @property
    def duplicate_ops(self) -> int:
        """Ops applied again by a retry and answered from their session instead."""
        return self._sm.duplicate_ops

    def client_op_applied(self, session: int, seq: int) -> bool:
        """Whether client ``session`` holds op ``seq`` as applied (its result kept, or the
        number below the session's floor): sent again, it is answered from there."""
        found = self._sm.sessions.get(session)
        return found is not None and (seq in found.done or seq < found.floor)

    def client_popped(self, session: int) -> SessionRecord | None:
        """What client ``session`` popped and did not give back, as applied here
        (:mod:`.session_popped`)."""
        return self._sm.popped.of(session)

    @property
    def popped_checking(self) -> bool:
        """Whether checked give-backs are checked against the sessions' records of popped
        elements (:attr:`.session_popped.SessionPopped.checking`)."""
        return self._sm.popped.checking

    @property
    def deduplicated_pushes(self) -> int:
        """Pushes given a msg_id still in the dedup window, answered without applying."""
        return self._sm.dedup.hits

    @property
    def dedup_limits(self) -> DedupLimits:
        """The bounds of the dedup window the cluster applies now."""
        return self._sm.dedup.limits

    @property
    def dedup_window_len(self) -> int:
        """Message ids in the dedup window now."""
        return len(self._sm.dedup)

    def table_sizes(self) -> dict[str, dict[str, Any]]:
        """The sizes and bounds of the bounded bookkeeping tables
        (:func:`~.table_sizes.table_sizes`)."""
        return table_sizes(self._sm)

    def capture(self) -> dict[str, Any]:
        """The whole state in its snapshot form (a copy; compares replicas)."""
        return self._sm.capture()
