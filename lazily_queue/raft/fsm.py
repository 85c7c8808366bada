"""FSM: what consensus needs of the state it replicates.

The replica applies every committed command to it, in log order, snapshots and restores
it, and releases the events it reports with the step that applied them. Consensus knows
nothing else about it; the node chooses the implementation
(:class:`lazily_queue.replicated.state_machine.StateMachine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class FSM(Protocol):
    """A deterministic state machine fed with committed commands."""

    def apply(self, payload: bytes, stamp: int) -> Any:
        """Apply one committed command stamped with the leader's time (ms); never raise.
        The result goes to the proposer's waiter."""

    def capture(self, deferred: bool = False) -> Any:
        """The whole state as plain values (the snapshot's ``state``). With ``deferred``
        (the snapshot file's capture) parts may be :class:`~.snapshot_pieces.Later`:
        made where the snapshot is encoded, from copies taken now."""

    def prepare(self, doc: Any) -> Any:
        """The state a captured ``doc`` restores to, built apart for :meth:`install`;
        raise unless it restores cleanly, changing nothing."""

    def install(self, prepared: Any) -> None:
        """Replace the whole state with one :meth:`prepare` built."""

    def drain_events(self) -> Sequence[object]:
        """The events reported since the last call, oldest first."""

    def op_name(self, code: int) -> str:
        """The name of op ``code`` (in errors and timeouts)."""

    def carries_message(self, code: int) -> bool:
        """Whether op ``code``'s last argument is a user's message, bounded by the
        replica's ``max_message_bytes``."""

    def bounds_containers(self, code: int) -> bool:
        """Whether op ``code`` holds at most one list, tuple, dict or set per
        :data:`~.values.CONTAINER_BYTES` bytes of ``max_message_bytes`` (decimals, UUIDs,
        dates and datetimes counted with them) when this member proposes it (a message
        of its own)."""

    def leading_ops(self) -> list[tuple[int, list[Any]]]:
        """The ops (``code``, ``args``) a member proposes as it becomes leader, read from
        the state as it stands then: appended right after the entry starting its term,
        before anything else proposed in the term (``[]``: none). Each is a marker: one
        its log holds already past what it applied (which all it proposes in the term
        follows) is not proposed again."""
