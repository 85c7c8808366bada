"""Raft-backed work-queue storage: a replicated WorkQueueCore with a local view.

Reads show this node's applied replica; operations are proposals that return once committed
and applied here. Time is the leader's: a ``now`` of ``None`` (the default) is replaced by
the leader's stamp, in milliseconds since the Unix epoch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..core.expiry import ttl_ms
from ..core.headers import Headers
from ..core.limits import Limits
from ..core.scheduling import RetryPolicy
from ..core.work import (
    DeadLetter,
    Delivery,
    PendingItem,
    Receipt,
    WorkQueueCore,
    WorkTransition,
)
from ..core.work_items import check_count, check_delivery_id, check_worker, given_now
from ..core.work_masks import ALL_WORK_READERS
from ..core.work_options import WorkPushOptions
from ..names import check_member
from ..replicated import ops as C
from ..replicated.events import WorkQueueChanged
from .capabilities import StorageCapabilities
from .raft_scheduling import RaftWorkScheduling
from .replicated_object import ReplicatedObject
from .work import Settlement, WorkQueueChangeListener

if TYPE_CHECKING:
    from ..replicated.view import ReadView
    from .replicated_object import Proposer




class RaftWorkQueueStorage(ReplicatedObject, RaftWorkScheduling):
    """A replicated WorkQueueCore: the WorkQueueStorage seam, observable, stamped with
    the leader's time when ``now`` is ``None``; ``retry`` is in milliseconds."""

    kind = "work queue"
    expiry_kind = "work_queue"
    capabilities = StorageCapabilities(observable=True, own_clock=True, lifecycle=True,
                                       logical_time=True, dedup=True, scheduling=True,
                                       headers=True, expiry=True)

    def __init__(
        self,
        driver: Proposer,
        view: ReadView,
        name: str,
        *,
        visibility_timeout: int,
        max_deliveries: int,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        ttl: float | None = None,
    ) -> None:
        super().__init__(driver, view, name, timeout=timeout)
        if ttl is not None:
            self.expiry_rules = [ttl_ms(ttl), None]
        self._empty = WorkQueueCore(visibility_timeout, max_deliveries, retry=retry)
        self.retry = retry
        #: The limits of a work queue declared with them (:mod:`.raft_limited`).
        self.limits: Limits | None = None
        self.visibility_timeout = self._empty.visibility_timeout
        self.max_deliveries = self._empty.max_deliveries
        #: The leader stamps milliseconds.
        self.lease_seconds = self.visibility_timeout / 1000
        self._listener: WorkQueueChangeListener | None = None

    def _declare_op(self) -> tuple[int, list[Any]]:
        """One ``WORK_DECLARE_OPTIONS`` with the whole configuration: a queue declared
        with other settings, retry policy or limits is refused (``config_mismatch``)."""
        options: dict[str, Any] = {}
        if self.retry is not None:
            options["retry"] = self.retry.to_list()
        if self.limits is not None:
            options["limits"] = self.limits.doc()
        return C.WORK_DECLARE_OPTIONS, [self.name, self.visibility_timeout,
                                        self.max_deliveries, options]

    def _core(self) -> WorkQueueCore:
        state = self._view.work_queue(self.name)
        return self._empty if state is None else state.core

    # -- view ----------------------------------------------------------------------------

    def pending_len(self) -> int:
        return self._core().pending_len()

    def is_empty(self) -> bool:
        return self._core().is_empty()

    def in_flight_len(self) -> int:
        return self._core().in_flight_len()

    def dead_letter_len(self) -> int:
        return self._core().dead_letter_len()

    def pending(self) -> list[PendingItem]:
        return self._core().pending()

    def in_flight(self) -> list[Delivery]:
        return self._core().in_flight()

    def dead_letters(self) -> list[DeadLetter]:
        return self._core().dead_letters()

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        return self._core().in_flight_by_worker()

    def snapshot(self) -> dict[str, Any]:
        return self._core().snapshot()

    # -- events --------------------------------------------------------------------------

    def set_change_listener(self, listener: WorkQueueChangeListener | None) -> None:
        self._listener = listener

    def on_event(self, event: WorkQueueChanged) -> None:
        if self._listener is not None:
            self._listener(event.mask)

    def on_reset(self) -> None:
        if self._listener is not None:
            self._listener(ALL_WORK_READERS)

    # -- operations ----------------------------------------------------------------------

    async def _masked(self, code: int, args: list[Any], timeout: float | None) -> Any:
        result, mask = await self._call(code, [self.name, *args], timeout)
        return WorkTransition(result, mask)

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(C.WORK_PUSH, [value], timeout)
        return transition

    async def push_many(
        self, values: list[Any], *, timeout: float | None = None
    ) -> list[WorkTransition[int]]:
        """Push ``values`` proposed together (see ``_call_many``); a value the cluster
        would refuse refuses them all, before any is proposed."""
        results = await self._call_many(C.WORK_PUSH, lambda value: [self.name, value],
                                        values, timeout)
        return [WorkTransition(result, mask) for result, mask in results]

    def check_values(self, values: list[Any]) -> None:
        """Refuse a batch of pushes with a value the cluster would refuse (nothing sent)."""
        self.check_all(C.WORK_PUSH, lambda value: [self.name, value], values)

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(
            C.WORK_PUSH_ONCE, [msg_id, value], timeout)
        return transition

    def headers_of(self, item_id: int) -> Headers | None:
        return self._view.work_headers_of(self.name, item_id)

    async def push_options(
        self, value: Any, options: WorkPushOptions, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[int]:
        """``WORK_PUSH_OPTIONS``: delays and ``not_before`` travel in ms; ``now`` (the
        time a delay or TTL counts from) is the leader's stamp when ``None``."""
        transition: WorkTransition[int] = await self._masked(
            C.WORK_PUSH_OPTIONS, [options.to_map(), given_now(now), value], timeout)
        return transition

    def check_worker_name(self, worker: str) -> None:
        """Raise :class:`~lazily_queue.errors.InvalidName` for a worker name over the
        length rule (a claim checks it before anything is sent)."""
        check_member(worker, "worker name")

    def check_claim_time(self, now: float) -> None:
        """Raise ``ValueError`` for a time that is not whole milliseconds."""
        given_now(now)

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[Delivery | None]:
        check_member(worker, "worker name")
        args = [self.name, check_worker(worker), given_now(now)]
        leased, mask = await self._claim(C.WORK_CLAIM, args, timeout)
        return WorkTransition(leased[0] if leased else None, mask)

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        check_member(worker, "worker name")
        args = [self.name, check_worker(worker), check_count(n), given_now(now)]
        return WorkTransition(*await self._claim(C.WORK_CLAIM_MANY, args, timeout))

    async def _claim(self, code: int, args: list[Any], timeout: float | None,
                     ) -> tuple[list[Delivery], int]:
        """Claim (``code``, ``args``): the leases made that are still held, and the mask
        of the claims made. A claim answered late (entries applied behind it before its
        caller ran, or its answer lost and a retry answered from the session's kept
        results after a failover) may name leases reaped or settled since: they are left
        out, and when none is left it claims again, as it would have found the items
        pending (each such lease counted an attempt, so this ends). ``timeout`` bounds the
        claims together: one made again gets what is left of it."""
        mask = 0
        clock = asyncio.get_running_loop().time
        deadline = clock() + self.bound(timeout)
        left = timeout
        while True:
            raw, made = await self._call(code, args, left)
            mask |= made
            leased = [] if raw is None else [Delivery(**d) for d in (
                [raw] if code == C.WORK_CLAIM else raw)]
            live = self._live(leased)
            if live or not leased:
                return live, mask
            left = max(deadline - clock(), 0.0)

    def _live(self, leased: list[Delivery]) -> list[Delivery]:
        """``leased`` less the leases this replica (a client's mirror) holds as ended; a
        lease it has not applied yet is kept."""
        core = self._core()
        made = core.next_ids()[1]
        return [d for d in leased if d.delivery_id >= made or (
            (held := core.delivery(d.delivery_id)) is not None
            and held.item_id == d.item_id and held.worker == d.worker)]

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        count, mask = await self._call(
            C.WORK_RELEASE, [self.name, check_worker(worker), _ids(delivery_ids)], timeout
        )
        return WorkTransition(count, mask)

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        """Ack (``"acked"``) or nack (``"nacked"``): the committed settlement's receipt,
        also the one recorded the first time when this worker repeats a settlement
        (``duplicate``), or ``None`` when it was refused."""
        code = C.WORK_ACK if outcome == "acked" else C.WORK_NACK
        _, mask, receipt, duplicate = await self._call(
            code, [self.name, check_worker(worker), check_delivery_id(delivery_id)], timeout
        )
        proof = None
        if receipt is not None:
            delivery_id, item_id, who, how, settled_at = receipt
            proof = Receipt(self.name, delivery_id, item_id, who, how, settled_at, bool(duplicate))
        return WorkTransition(proof, mask)

    async def settle_many(
        self, worker: str, delivery_ids: list[int], outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[list[Receipt | None]]:
        """Settle several deliveries in one commit, in order: a receipt per id as
        :meth:`settle` gives it (``None`` for a refused one)."""
        results, mask = await self._call(
            C.WORK_SETTLE_MANY, [self.name, check_worker(worker), outcome, _ids(delivery_ids)],
            timeout
        )
        receipts: list[Receipt | None] = []
        for _, receipt, duplicate in results:
            if receipt is None:
                receipts.append(None)
                continue
            delivery_id, item_id, who, how, settled_at = receipt
            receipts.append(Receipt(self.name, delivery_id, item_id, who, how, settled_at,
                                    bool(duplicate)))
        return WorkTransition(receipts, mask)

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        transition: WorkTransition[int] = await self._masked(
            C.WORK_REAP, [given_now(now)], timeout)
        return transition

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[bool]:
        transition: WorkTransition[bool] = await self._masked(
            C.WORK_EXTEND, [check_worker(worker), check_delivery_id(delivery_id), given_now(now)],
            timeout
        )
        return transition

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        ids = None if item_ids is None else sorted(item_ids)
        transition: WorkTransition[int] = await self._masked(C.WORK_REDRIVE, [ids], timeout)
        return transition


def _ids(delivery_ids: Collection[int]) -> list[int]:
    """Delivery ids as an op carries them (each checked: ``TypeError`` here, as locally)."""
    return [check_delivery_id(i) for i in delivery_ids]
