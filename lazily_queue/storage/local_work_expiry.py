"""The local work queue with message expiry (capability ``expiry``).

:class:`ExpiringWorkQueueStorage` is :class:`~.local_work.LocalWorkQueueStorage` whose
items may expire (:mod:`lazily_queue.core.expiry`) while they wait for their first
delivery: a default TTL and a per-message TTL (``push_options``). Pushes are stamped
with its ``clock``; a claim decides expiry at the claim's own ``now`` (seconds), so a
claim never leases an item expired at that time.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.expiry import Expiry, optional_ttl_ms
from ..core.expiry_take import claim_live, expire_work_head
from ..core.work import Delivery, WorkQueueCore, WorkTransition
from ..core.work_masks import EXPIRED as WORK_EXPIRED
from ..errors import InvalidConfiguration
from .attempts import check_timeout
from .local import Clock
from .local_work import LocalWorkQueueStorage


class ExpiringWorkQueueStorage(LocalWorkQueueStorage):
    """A local work queue whose items expire ``ttl`` seconds after their push (``None``:
    only those pushed with a TTL of their own)."""

    __slots__ = ("expiry",)

    capabilities = replace(LocalWorkQueueStorage.capabilities, expiry=True)

    def __init__(self, core: WorkQueueCore, *, name: str = "work_queue",
                 clock: Clock | None = None, ttl: float | None = None) -> None:
        if clock is None:
            raise InvalidConfiguration(
                f"{name}: a work queue with message expiry stamps its pushes: give clock=")
        self.expiry = Expiry(optional_ttl_ms(ttl))
        super().__init__(core, name=name, clock=clock)

    def expired_count(self) -> int:
        return self.expiry.expired

    def _stamp(self) -> int:
        assert self.clock is not None
        return int(self.clock() * 1000)

    def _note_ttl(self, item_id: int, ttl_ms: int, stamp: int | None,
                  now: float | None) -> None:
        """The TTL counts from the push (``now``, else the stamp), delayed or not."""
        self.expiry.note(item_id, (stamp or 0) if now is None else int(now * 1000), ttl_ms)

    def _claim(self, worker: str, now: float, n: int) -> tuple[list[Delivery], int]:
        leased, expired, mask = claim_live(self.core, self.expiry, worker, int(now * 1000),
                                           now, n)
        return leased, mask | (WORK_EXPIRED if expired else 0)

    def try_claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]:
        leased, mask = self._claim(worker, now, 1)
        return WorkTransition(leased[0] if leased else None, mask)

    async def poll_many(self, worker: str, n: int, now: float | None, *,
                        timeout: float | None = None) -> WorkTransition[list[Delivery]]:
        if timeout is not None:
            check_timeout(timeout)
        if now is None:
            raise TypeError("a local work queue has no clock of its own: pass now (a time)")
        leased, mask = self._claim(worker, now, n)
        return WorkTransition(leased, mask)

    def try_expire(self, now: float) -> WorkTransition[int]:
        """Discard the items expired at ``now`` (seconds) at the pending head."""
        n, mask = expire_work_head(self.core, self.expiry, int(now * 1000))
        return WorkTransition(n, mask | (WORK_EXPIRED if n else 0))
