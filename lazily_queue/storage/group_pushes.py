"""What every consumer group's storage shares: it refuses pushes (its topic feeds it)."""

from __future__ import annotations

from typing import Any

from ..core.work import WorkTransition
from ..errors import UnsupportedOperation
from .attempts import check_timeout


class FedByTopic:
    """Refuses ``push``, ``push_once``, ``push_ttl`` and ``push_options``, naming the
    topic to publish to instead; put it first among the bases so that it overrides the
    work-queue storage's pushes."""

    __slots__ = ()

    name: str
    topic: str

    def _refuse_push(self) -> UnsupportedOperation:
        return UnsupportedOperation(
            f"{self.name}: a consumer group is fed by its topic {self.topic!r}; publish "
            "to the topic instead of pushing to the group")

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        raise self._refuse_push()

    async def push_options(self, value: Any, options: Any, now: float | None, *,
                           timeout: float | None = None) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        raise self._refuse_push()

    async def push_ttl(self, value: Any, ttl_ms: int, *,
                       timeout: float | None = None) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        raise self._refuse_push()

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        if timeout is not None:
            check_timeout(timeout)
        raise self._refuse_push()
