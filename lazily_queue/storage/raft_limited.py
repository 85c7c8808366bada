"""The replicated work queue of a cell declared with limits.

:class:`LimitedRaftWorkQueueStorage` declares the work queue with its
limits (``WORK_DECLARE_OPTIONS``, :mod:`lazily_queue.replicated.work_options`): its
pushes are checked against the limits in log order, and a push the limits refuse raises
:class:`~lazily_queue.errors.LimitExceeded` here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.limited_work import LimitedWorkQueue
from ..core.limits import Limits
from ..core.scheduling import RetryPolicy
from ..core.work import WorkTransition
from ..core.work_options import WorkPushOptions
from ..errors import LimitExceeded
from ..raft.errors import ProposalRejected
from .raft_work_queue import RaftWorkQueueStorage
from .replicated_object import Proposer

if TYPE_CHECKING:
    from ..replicated.view import ReadView


class LimitedRaftWorkQueueStorage(RaftWorkQueueStorage):
    """A replicated work queue with limits (module docstring), with every option of a
    work queue: a retry policy (declared with ``WORK_DECLARE_OPTIONS``), a default TTL,
    and pushes with priorities, due times, TTLs and headers, all checked against the
    limits."""

    def __init__(self, driver: Proposer, view: ReadView, name: str, *,
                 visibility_timeout: int, max_deliveries: int, limits: Limits,
                 timeout: float = 10.0, retry: RetryPolicy | None = None,
                 ttl: float | None = None) -> None:
        super().__init__(driver, view, name, visibility_timeout=visibility_timeout,
                         max_deliveries=max_deliveries, timeout=timeout, retry=retry, ttl=ttl)
        self.limits: Limits = limits

    def limited_work(self) -> LimitedWorkQueue | None:
        """The work queue as applied here (``None`` before it is declared)."""
        state = self._view.work_queue(self.name)
        core = None if state is None else state.core
        return core if isinstance(core, LimitedWorkQueue) else None

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        return await self._checked(super().push(value, timeout=timeout))

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        return await self._checked(super().push_once(value, msg_id, timeout=timeout))

    async def push_options(
        self, value: Any, options: WorkPushOptions, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[int]:
        return await self._checked(super().push_options(value, options, now, timeout=timeout))

    async def _checked(self, call: Any) -> WorkTransition[int]:
        try:
            result: WorkTransition[int] = await call
        except ProposalRejected as exc:
            if not str(exc).startswith("full:"):
                raise
            text = str(exc)[len("full: "):]
            limit = "max_bytes" if "max_bytes" in text else "max_length"
            bound = self.limits.max_bytes if limit == "max_bytes" else self.limits.max_length
            raise LimitExceeded(text, cell=self.name, limit=limit, value=bound) from None
        return result
