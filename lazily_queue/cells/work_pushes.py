"""The push surface of :class:`~.work_queue.WorkQueueCell`: plain pushes, and pushes
with any combination of options (``msg_id``, ``headers``, ``ttl``, ``priority``,
``delay`` / ``not_before``; :mod:`lazily_queue.core.work_options`), and the headers an
item was pushed with.

Options are checked once before anything is applied or proposed; each needs its
capability (``dedup``, ``headers``, ``expiry``, ``scheduling``), refused with
:class:`~lazily_queue.errors.UnsupportedOperation` naming the backend. A push with a
``msg_id`` only goes to ``push_once``; any other combination to ``push_options``, in one
step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from ..core.headers import view
from ..core.limits import Limits
from ..core.work import WorkTransition
from ..core.work_options import WorkPushOptions, work_options
from ..errors import LimitExceeded
from ..reactive import Context, Slot
from ..storage.work import (
    SchedulingWorkQueueStorage,
    SyncWorkQueueStorage,
    WorkQueueStorage,
    as_headers_work_queue,
)
from .loop_owner import LoopOwned
from .push_checks import refuse_unsupported, values_of
from .work_batches import Now
from .work_limits import named, wait_for_room

R = TypeVar("R")


class WorkQueuePushes(LoopOwned):
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

    def _now(self, now: Now) -> float | None:
        raise NotImplementedError

    def _scheduling(self, what: str) -> SchedulingWorkQueueStorage:
        raise NotImplementedError

    def limits(self) -> Limits | None:
        raise NotImplementedError

    def try_push(self, value: Any) -> int:
        raise NotImplementedError

    async def push(self, value: Any, *, msg_id: str | None = None, priority: int = 0,
                   delay: float | None = None, not_before: datetime | None = None,
                   now: Now = None, wait: bool = True, ttl: float | None = None,
                   headers: Mapping[str, str] | None = None) -> int:
        """Append ``value`` to the pending tail; returns its ``item_id``.

        Over a replicated backend this and the other operations return once committed.
        Every option combines with the others:

        - ``msg_id`` (capability ``dedup``): the push applies once: while the id is in
          the backend's dedup window a repeat adds nothing and returns the first
          ``item_id``.
        - ``priority`` (0..9, higher claimed first), ``delay`` (seconds) or
          ``not_before`` (an aware datetime), capability ``scheduling``: the item is
          committed now but not claimable before ``now + delay`` / ``not_before``, then
          joins its level's tail (see :mod:`lazily_queue.core.scheduling`).
        - ``ttl`` (seconds, capability ``expiry``): it expires that long after its push,
          delayed or not (a delay does not extend it: a delayed item is offered for
          ``ttl - delay``), unless claimed before (never under a
          lease, nor after its first delivery).
        - ``headers`` (capability ``headers``): every delivery's ``Job.headers``
          (redeliveries, nacks and dead letters included).

        ``now`` (a time or a clock callable; default the cell's clock, or the leader's
        stamp) is the time a delay or ttl counts from. On a work queue with limits a push
        that does not fit waits for room (``wait=False``: raises
        :class:`~lazily_queue.errors.LimitExceeded`).
        """
        self._own()
        options = None if (msg_id is None and headers is None and ttl is None and priority == 0
                           and delay is None and not_before is None) else work_options(
            msg_id=msg_id, headers=headers, ttl=ttl, priority=priority, delay=delay,
            not_before=not_before)
        if now is not None and (options is None or (not options.delayed
                                                    and options.ttl_ms is None)):
            raise ValueError(f"{self.name}: now= is the time a delay or ttl counts from; "
                             "give it with delay=, not_before= or ttl=")
        if options is not None:
            self._check_options(options)
        while True:
            try:
                if options is None:
                    if self._sync is not None:
                        return self.try_push(value)
                    return self._apply(await self._storage.push(value))
                return await self._push_with(value, options, now)
            except LimitExceeded as exc:  # a work queue with limits: wait for room
                limits = self.limits()
                if not wait or limits is None:
                    raise named(exc, self.name) from None
                await wait_for_room(self._storage, limits, value,
                                    [self.pending_len, self.in_flight_len],
                                    self._raise_if_stopped, self.ctx)

    async def push_many(self, values: Iterable[Any], *, wait: bool = True) -> list[int]:
        """Push every value in order, without options; returns their item ids.

        Over a replicated backend (a member's or a client's) they are proposed together,
        in runs of :data:`~lazily_queue.storage.runs.MANY_AT_ONCE`, so they commit in
        order in one entry where they fit.
        Elsewhere, and on a work queue with limits, they are pushed one after another as
        :meth:`push` does (waiting for room unless ``wait=False``). A value the cluster
        refuses (``UnsupportedValue``, ``MessageTooLarge``) refuses them all before any
        is sent; another failure raises once the pushes under way have ended: the values
        before it, or proposed with it, may be pushed. For exactly-once, push each value
        with its own ``msg_id``.
        """
        self._own()
        pending = values_of(values, "push")
        together = getattr(self._storage, "push_many", None)
        if self._sync is not None or together is None or self.limits() is not None:
            check = getattr(self._storage, "check_values", None)
            if check is not None:
                check(pending)
            return [await self.push(value, wait=wait) for value in pending]
        transitions: list[WorkTransition[int]] = await together(pending)
        return [self._apply(transition) for transition in transitions]

    def _check_options(self, options: WorkPushOptions) -> None:
        """Refuse an option whose capability the backend lacks, naming it."""
        storage = self._storage
        caps = storage.capabilities
        refuse_unsupported(self.name, storage, caps, msg_id=options.msg_id is not None,
                           headers=options.headers is not None,
                           ttl=options.ttl_ms is not None)
        if options.scheduled:
            self._scheduling("priority" if not options.delayed else "delayed delivery")

    async def _push_with(self, value: Any, options: WorkPushOptions, now: Now) -> int:
        storage: Any = self._storage
        if options.given() == ["msg_id"]:
            return int(self._apply(await storage.push_once(value, options.msg_id)))
        moment = self._now(now) if options.delayed or now is not None else None
        return int(self._apply(await storage.push_options(value, options, moment)))

    def headers_of(self, item_id: int) -> Mapping[str, str]:
        """The headers item ``item_id`` was pushed with (read-only; empty when none)."""
        storage = as_headers_work_queue(self._storage)
        return view(None if storage is None else storage.headers_of(item_id))

