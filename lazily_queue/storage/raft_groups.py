"""Raft-backed consumer groups: the work queue of a replicated topic's group.

:class:`RaftGroupStorage` is a :class:`~.raft_work_queue.RaftWorkQueueStorage` over the
group's work queue (``"<topic>:<group>"``, see :mod:`lazily_queue.replicated.groups`),
declared with ``GROUP_DECLARE``, which feeds it the retained elements from its start;
the topic's publishes feed it after that, on every replica. Pushes are refused: a group
is fed by its topic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.groups import group_queue_name
from ..core.topic import Start, check_start, out_of_range
from ..replicated import ops as C
from .group_pushes import FedByTopic
from .raft_work_queue import RaftWorkQueueStorage
from .replicated_object import raise_op_error

if TYPE_CHECKING:
    from ..replicated.view import ReadView
    from .replicated_object import Proposer


class RaftGroupStorage(FedByTopic, RaftWorkQueueStorage):
    """One consumer group of a replicated topic (module docstring)."""

    kind = "group"

    def __init__(
        self, driver: Proposer, view: ReadView, topic: str, group: str, *,
        visibility_timeout: int, max_deliveries: int, start: Start = "tail",
        timeout: float = 10.0,
    ) -> None:
        super().__init__(driver, view, group_queue_name(topic, group),
                         visibility_timeout=visibility_timeout, max_deliveries=max_deliveries,
                         timeout=timeout)
        self.topic = topic
        self.group = group
        self.start = check_start(start)

    def __repr__(self) -> str:
        return f"RaftGroupStorage({self.name!r})"

    def _declare_op(self) -> tuple[int, list[Any]]:
        return C.GROUP_DECLARE, [self.topic, self.group, self.visibility_timeout,
                                 self.max_deliveries, self.start]

    async def _declare(self, timeout: float | None) -> None:
        # Read before it applies: a client's mirror follows the group from here on, so
        # the group as declared is there when the answer is.
        self._view.work_queue(self.name)
        code, args = self._declare_op()
        result = raise_op_error(
            await self._driver.call(code, args, timeout=self.bound(timeout)))
        if result[0] == "out_of_range":
            raise out_of_range(result[1], result[2], result[3])




GroupRegistrar = Callable[[RaftGroupStorage], RaftGroupStorage]
"""Makes a group's storage known to the node's event routing; returns the storage to
use (the one already routed under that name, if any)."""
