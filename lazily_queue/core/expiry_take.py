"""Takes that skip expired elements: the rules of :mod:`.expiry` applied to a FIFO, a
work queue's pending items and a topic's log, at an explicit ``now`` (ms).

A work item expires only while it waits for its first delivery: once claimed, its fate
is decided by its lease, retries and dead letters (an item back from a lease is never
expired under or after its holder).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ids
from .expiry import Expiry
from .fifo import Fifo
from .ids import Run
from .queue import QueuePopError
from .topic_expiry import age_frontier
from .work import Delivery, WorkQueueCore
from .work_scheduled import Fitting

StampedPop = Callable[[], "tuple[list[Any], list[Run]] | QueuePopError"]
"""Pops one element with its run (``Fifo.pop_stamped(1)``), reporting the transition."""
RunPop = Callable[[int], object]
"""Pops ``k`` elements at once (``Fifo.pop_stamped(k)``), reporting each transition as
``k`` pops of one would."""


def expire_queue_head(fifo: Fifo[Any], expiry: Expiry, now: int, pop_one: StampedPop,
                      limit: int | None = None, pop_run: RunPop | None = None) -> int:
    """Remove the expired elements at the head with ``pop_one``, at most ``limit`` of
    them (``None``: all); returns how many (added to ``expiry.expired``). With
    ``pop_run``, a run of them found without a step per element
    (:func:`_expired_run_at_head`) leaves in one call of it, with the same result."""
    n = 0
    while limit is None or n < limit:
        first, k = (_expired_run_at_head(fifo, expiry, now, None if limit is None else limit - n)
                    if pop_run else (0, 0))
        if pop_run is not None and k > 1:
            pop_run(k)
            if expiry.deadlines:
                for element_id in range(first, first + k):
                    expiry.forget(element_id)
            n += k
            continue
        head = fifo.head_id()
        if head is None or not expiry.is_expired(head[0], head[1], now):
            break
        pop_one()
        expiry.forget(head[0])
        n += 1
    expiry.expired += n
    return n


def _expired_run_at_head(fifo: Fifo[Any], expiry: Expiry, now: int,
                         most: int | None) -> tuple[int, int]:
    """``(first id, how many)`` of the elements of the head's run
    (:meth:`~.fifo.Fifo.head_run`), at most ``most`` (``None``: all), expired at ``now``
    in a row, when that takes no step per element (:func:`_expired_in_run`)."""
    run = fifo.head_run()
    if run is None or expiry.retained is not None:
        return 0, 0
    first, count, stamp = run
    return first, _expired_in_run(expiry, first, count if most is None else min(count, most),
                                  stamp, now)


def _expired_in_run(expiry: Expiry, first: int, count: int, stamp: int, now: int) -> int:
    """How many of the ids ``first..first + count - 1``, all stamped ``stamp``, expired at
    ``now`` in a row from ``first``, found in as many steps as that answer at most: those
    before the first with a ttl of its own by the default ttl (that one may end later),
    or those expired by their own ttls while the default spares them."""
    default = expiry.default_ms
    if default is not None and now >= stamp + default:
        return expiry.first_own(first, first + count) - first
    return expiry.own_run(first, first + count, now) - first


def _queue_head_expired(fifo: Fifo[Any], expiry: Expiry, now: int) -> bool:
    head = fifo.head_id()
    return head is not None and expiry.is_expired(head[0], head[1], now)


def pop_live(fifo: Fifo[Any], expiry: Expiry, now: int, n: int, pop_one: StampedPop,
             limit: int | None = None, pop_run: RunPop | None = None
             ) -> tuple[tuple[list[Any], list[Run]] | QueuePopError, int]:
    """Up to ``n`` live elements with their runs (as ``Fifo.pop_stamped``), or ``Empty``
    / ``Closed`` when none is live, and how many expired ones were removed on the way:
    at most ``limit`` (``None``: all). Past ``limit`` an expired head stays and the take
    stops there, answering what it took or ``Empty`` (never an expired element)."""
    values: list[Any] = []
    runs: list[Run] = []
    expired = 0
    while len(values) < n:
        expired += expire_queue_head(fifo, expiry, now, pop_one,
                                     None if limit is None else limit - expired, pop_run)
        if expired == limit and _queue_head_expired(fifo, expiry, now):
            if values:
                break
            return QueuePopError.Empty, expired
        head = fifo.head_id()
        result = pop_one()
        if isinstance(result, QueuePopError):
            if values:
                break
            return result, expired
        values.extend(result[0])
        for first, count, stamp in result[1]:
            ids.append(runs, first, count, stamp)
        if head is not None:
            expiry.take(head[0])
    return (values, runs), expired


def expire_work_head(core: WorkQueueCore, expiry: Expiry, now: int,
                     limit: int | None = None) -> tuple[int, int]:
    """Discard the expired never-delivered items at the pending head, at most ``limit``
    of them (``None``: all); returns ``(how many, reader mask)``. Items of ids in a row
    pushed at one stamp leave together where that takes no step per item to decide
    (:func:`_expired_in_run`), with the same result as one by one."""
    n = mask = 0
    while limit is None or n < limit:
        run = core.run_at_head()  # retained items: the expired ones leave at once
        if run is not None and (k := expiry.expired_run(run[0], run[1], now)):
            k = k if limit is None else min(k, limit - n)
            mask |= core.discard_run(k).mask
            expiry.forget_run(run[0], run[0] + k)
            n += k
            continue
        fresh = None if expiry.retained is not None else core.fresh_head()
        if fresh is not None and (k := _expired_in_run(
                expiry, fresh[0], fresh[1] if limit is None else min(fresh[1], limit - n),
                fresh[2], now)) > 1:
            gone = core.discard_fresh(k)
            mask |= gone.mask
            if expiry.deadlines:
                for item_id in range(fresh[0], fresh[0] + gone.result):
                    expiry.forget(item_id)
            n += gone.result
            continue
        head = _expired_work_head(core, expiry, now)
        if head is None:
            break
        mask |= core.discard_head().mask
        expiry.forget(head)
        n += 1
    expiry.expired += n
    return n, mask


def _expired_work_head(core: WorkQueueCore, expiry: Expiry, now: int) -> int | None:
    """The id of the pending head when it expired never delivered, else ``None``."""
    head = core.head()
    if head is None or head.attempts or not expiry.is_expired(
            head.item_id, core.stamp_of(head.item_id), now):
        return None
    return head.item_id


def claim_live(core: WorkQueueCore, expiry: Expiry, worker: str, now: int, lease_now: float,
               n: int, fitting: Fitting | None = None, limit: int | None = None
               ) -> tuple[list[Delivery], int, int]:
    """Lease up to ``n`` live items to ``worker`` (lease time ``lease_now``; no more
    than ``fitting`` answers, as :meth:`~.work.WorkQueueCore.claim_many`), discarding
    the expired ones met on the way, at most ``limit`` (``None``: all; past it an
    expired head stays and the claim stops there); returns ``(deliveries, expired,
    reader mask)``."""
    leased: list[Delivery] = []
    expired = 0
    mask = core.promote_due(lease_now).mask  # delayed items due now are ready, and may expire
    while len(leased) < n:
        dropped, dropped_mask = expire_work_head(
            core, expiry, now, None if limit is None else limit - expired)
        expired += dropped
        mask |= dropped_mask
        if expired == limit and _expired_work_head(core, expiry, now) is not None:
            break
        got, claim_mask = core.claim_many(worker, lease_now, 1, fitting)
        if not got:
            break
        mask |= claim_mask
        leased.extend(got)
        expiry.forget(got[0].item_id)
    return leased, expired, mask


__all__ = ["RunPop", "StampedPop", "age_frontier", "claim_live", "expire_queue_head",
           "expire_work_head", "pop_live"]
