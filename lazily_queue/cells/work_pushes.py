"""The push surface of :class:`~.work_queue.WorkQueueCell`: plain, exactly-once
(``msg_id``), scheduled, expiring (``ttl``) and header-carrying pushes, and the headers
an item was pushed with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from ..core.dedup import check_msg_id
from ..core.headers import Headers, check_headers, view
from ..core.limits import Limits
from ..core.work import WorkTransition
from ..errors import LimitExceeded, UnsupportedOperation
from ..reactive import Context, Slot
from ..storage.work import (
    SyncWorkQueueStorage,
    WorkQueueStorage,
    as_dedup_work_queue,
    as_headers_work_queue,
)
from .expiry import push_ttl
from .once import no_dedup
from .work_batches import Now
from .work_limits import named, wait_for_room

R = TypeVar("R")


class WorkQueuePushes:
    """The push half of a work queue cell (the cell sets up what is declared)."""

    name: str
    ctx: Context
    _storage: WorkQueueStorage
    _sync: SyncWorkQueueStorage | None
    _raise_if_stopped: Callable[[], None]
    pending_len: Slot[int]
    in_flight_len: Slot[int]

    def _apply(self, transition: WorkTransition[R]) -> R:
        raise NotImplementedError

    def limits(self) -> Limits | None:
        raise NotImplementedError

    def try_push(self, value: Any) -> int:
        raise NotImplementedError

    async def _push_scheduled(self, value: Any, priority: object, delay: object,
                              not_before: datetime | None, now: Now) -> int:
        raise NotImplementedError

    async def push(self, value: Any, *, msg_id: str | None = None, priority: int = 0,
                   delay: float | None = None, not_before: datetime | None = None,
                   now: Now = None, wait: bool = True, ttl: float | None = None,
                   headers: Mapping[str, str] | None = None) -> int:
        """Append ``value`` to the pending tail; returns its ``item_id``.

        Over a replicated backend this and the other operations return once committed.
        With ``msg_id`` (capability ``dedup``) it applies once: while the id is in the
        backend's dedup window a repeat adds nothing and returns the first ``item_id``.
        ``priority`` (0..9, higher claimed first), ``delay`` (seconds) and ``not_before``
        (an aware datetime) need the ``scheduling`` capability: the item is committed
        now but not claimable before ``now + delay`` / ``not_before`` (``now``: the
        cell's clock, or the leader's stamp); see :mod:`lazily_queue.core.scheduling`.
        ``ttl`` (seconds, capability ``expiry``): it expires that long after its push
        unless claimed before (never under a lease, nor after its first delivery).
        With ``headers`` (capability ``headers``) the item carries them while it exists:
        every delivery's ``Job.headers`` (redeliveries included); a push with headers
        takes no priority, delay, not_before or ttl, and a work queue with limits takes
        none (:class:`~lazily_queue.errors.UnsupportedOperation`).
        """
        if headers is not None and (checked := check_headers(headers)) is not None:
            if ttl is not None:
                raise UnsupportedOperation(f"{self.name}: a push with headers takes no ttl "
                                           "yet; give one or the other")
            if self.limits() is not None:
                raise UnsupportedOperation(f"{self.name}: a work queue with limits does not "
                                           "keep message headers yet; push without headers=")
        else:
            checked = None
        if ttl is not None:
            scheduled = priority != 0 or delay is not None or not_before is not None
            return int(self._apply(await push_ttl(self.name, self._storage, value, ttl,
                                                  msg_id, scheduled)))
        if now is not None and delay is None and not_before is None:
            raise ValueError(f"{self.name}: now= is the time a delay counts from; give it "
                             "with delay= or not_before=")
        scheduled = priority != 0 or delay is not None or not_before is not None
        if checked is not None:
            if scheduled:
                raise UnsupportedOperation(f"{self.name}: a push with headers takes no "
                                           "priority, delay or not_before")
            return await self._push_headers(value, checked, msg_id)
        if scheduled:
            if msg_id is not None:
                raise UnsupportedOperation(f"{self.name}: a push with msg_id takes no "
                                           "priority, delay or not_before")
            return await self._push_scheduled(value, priority, delay, not_before, now)
        while True:
            try:
                return await self._push(value, msg_id)
            except LimitExceeded as exc:  # a work queue with limits: wait for room
                limits = self.limits()
                if not wait or limits is None:
                    raise named(exc, self.name) from None
                await wait_for_room(self._storage, limits, value,
                                    [self.pending_len, self.in_flight_len],
                                    self._raise_if_stopped, self.ctx)

    async def _push(self, value: Any, msg_id: str | None) -> int:
        if msg_id is not None:
            storage = as_dedup_work_queue(self._storage)
            if storage is None:
                raise no_dedup(self.name, self._storage, "push")
            return self._apply(await storage.push_once(value, check_msg_id(msg_id)))
        if self._sync is not None:
            return self.try_push(value)
        return self._apply(await self._storage.push(value))

    async def _push_headers(self, value: Any, headers: Headers, msg_id: str | None) -> int:
        storage = as_headers_work_queue(self._storage)
        if storage is None:
            raise UnsupportedOperation(
                f"{self.name}: {type(self._storage).__name__} does not keep message headers; "
                "push without headers= (or carry them in the value)")
        if msg_id is not None:
            if as_dedup_work_queue(self._storage) is None:
                raise no_dedup(self.name, self._storage, "push")
            msg_id = check_msg_id(msg_id)
        return self._apply(await storage.push_headers(value, headers, msg_id))

    def headers_of(self, item_id: int) -> Mapping[str, str]:
        """The headers item ``item_id`` was pushed with (read-only; empty when none)."""
        storage = as_headers_work_queue(self._storage)
        return view(None if storage is None else storage.headers_of(item_id))
