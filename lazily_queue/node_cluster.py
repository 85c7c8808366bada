"""The cluster operations of a :class:`~lazily_queue.node.Node`: the barrier, the
leader, membership changes (:mod:`.membership`) and the node's status (:mod:`.status`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from . import membership
from .core.numbers import wait_limit
from .replicated import ops
from .status import local_status
from .storage.attempts import attempt_timeout
from .storage.replicated_object import raise_op_error

if TYPE_CHECKING:
    from .node import Node
    from .raft.driver import Driver


class NodeCluster:
    """:class:`~lazily_queue.node.Node`'s operations on the cluster it is a member of."""

    node_id: str
    op_timeout: float

    @property
    def running(self) -> bool:
        raise NotImplementedError

    @property
    def driver(self) -> Driver:
        raise NotImplementedError

    def _as_node(self) -> Node:
        """This node, typed as the :class:`~lazily_queue.node.Node` it is part of."""
        return cast("Node", self)

    async def barrier(self, *, timeout: float | None = None) -> None:
        """Return once this node has applied everything committed before the call.

        Reads made right after are linearizable: the barrier goes through the leader.
        """
        bound = attempt_timeout(timeout, self.op_timeout)
        raise_op_error(await self.driver.call(ops.BARRIER, [], timeout=bound))

    async def wait_for_leader(self, *, timeout: float | None = 10.0) -> str:
        """Wait until this node knows a leader; return its id, or raise ``TimeoutError``
        after ``timeout`` seconds (``None``: no bound; ``TypeError`` / ``ValueError`` for
        one that is no number of seconds). A restarted node may not have applied its
        journal yet: :meth:`barrier` waits for that."""
        limit = wait_limit(timeout)
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            leader = self.driver.replica.engine.leader_id
            if leader is not None:
                return leader
            if deadline is not None and time.monotonic() > deadline:
                replica = self.driver.replica
                cause = replica.majority_problem()
                raise TimeoutError(
                    f"node {self.node_id} saw no leader within {timeout}s"
                    + (f": {cause}" if cause else "") + f"; its Raft state: {replica.status()}"
                )
            await self.driver.next_step()

    async def add_member(
        self, node_id: int | str, address: str | None = None, *, timeout: float | None = None
    ) -> None:
        """Add a node to the cluster (one change at a time); start it with every member
        in its ``peers``. Its address is replicated so every member can reach it. An id
        no node can have, or an address no member could listen on or where another
        member listens, raises :class:`~lazily_queue.errors.InvalidConfiguration` with
        nothing changed (:mod:`~lazily_queue.member_checks`)."""
        await membership.add_member(
            self._as_node(), str(node_id), address, attempt_timeout(timeout, self.op_timeout))

    async def remove_member(self, node_id: int | str, *, timeout: float | None = None) -> None:
        """Remove a node from the cluster and forget its replicated address; stop it after."""
        await membership.remove_member(
            self._as_node(), str(node_id), attempt_timeout(timeout, self.op_timeout))

    async def transfer_leadership(
        self, to: int | str | None = None, *, timeout: float | None = None
    ) -> str:
        """On the leader: hand leadership to ``to`` (or the most caught-up follower)."""
        target = None if to is None else str(to)
        return await membership.transfer_leadership(
            self._as_node(), target, attempt_timeout(timeout, self.op_timeout))

    @property
    def is_leader(self) -> bool:
        return self.running and self.driver.replica.engine.is_leader

    @property
    def leader_id(self) -> str | None:
        return self.driver.replica.engine.leader_id if self.running else None

    def status(self) -> dict[str, Any]:
        """Raft and queue state as seen from this node."""
        return local_status(self._as_node())
