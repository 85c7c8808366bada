"""The work-queue storage wrapper that applies a cell's serializer (see :mod:`.serializing`)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any, TypeVar

from ..core.work import DeadLetter, Delivery, PendingItem, Receipt, WorkTransition
from ..core.work_options import WorkPushOptions
from ..serializers import Codec
from .serializing import SerializingWrapper
from .work import Settlement, WorkQueueStorage

D = TypeVar("D", Delivery, PendingItem, DeadLetter)


class SerializingWorkQueueStorage(SerializingWrapper):
    """A work-queue backend storing ``serializer.encode(value)``."""

    def __init__(self, inner: WorkQueueStorage, codec: Codec[Any]) -> None:
        super().__init__(inner, codec)
        self.inner: WorkQueueStorage = inner

    def _item(self, item: D) -> D:
        return replace(item, value=self.codec.decode(item.value))

    def _maybe(self, delivery: Delivery | None) -> Delivery | None:
        return None if delivery is None else self._item(delivery)

    def check_worker_name(self, worker: str) -> None:
        self.inner.check_worker_name(worker)

    def check_claim_time(self, now: float) -> None:
        self.inner.check_claim_time(now)

    @property
    def visibility_timeout(self) -> float:
        return self.inner.visibility_timeout

    @property
    def lease_seconds(self) -> float:
        return self.inner.lease_seconds

    @property
    def max_deliveries(self) -> int:
        return self.inner.max_deliveries

    def pending_len(self) -> int:
        return self.inner.pending_len()

    def is_empty(self) -> bool:
        return self.inner.is_empty()

    def in_flight_len(self) -> int:
        return self.inner.in_flight_len()

    def dead_letter_len(self) -> int:
        return self.inner.dead_letter_len()

    def pending(self) -> list[PendingItem]:
        return [self._item(p) for p in self.inner.pending()]

    def in_flight(self) -> list[Delivery]:
        return [self._item(d) for d in self.inner.in_flight()]

    def dead_letters(self) -> list[DeadLetter]:
        return [self._item(d) for d in self.inner.dead_letters()]

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        return {w: [self._item(d) for d in ds]
                for w, ds in self.inner.in_flight_by_worker().items()}

    def snapshot(self) -> dict[str, Any]:
        return self.inner.snapshot()

    def try_push(self, value: Any) -> WorkTransition[int]:
        result: WorkTransition[int] = self.inner.try_push(  # type: ignore[attr-defined]
            self.codec.encode(value))
        return result

    def try_claim(self, worker: str, now: float) -> WorkTransition[Delivery | None]:
        result, mask = self.inner.try_claim(worker, now)  # type: ignore[attr-defined]
        return WorkTransition(self._maybe(result), mask)

    async def push(self, value: Any, *, timeout: float | None = None) -> WorkTransition[int]:
        return await self.inner.push(self.codec.encode(value), timeout=timeout)

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        inner: Any = self.inner
        result: WorkTransition[int] = await inner.push_once(
            self.codec.encode(value), msg_id, timeout=timeout)
        return result

    async def push_options(
        self, value: Any, options: WorkPushOptions, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[int]:
        inner: Any = self.inner
        result: WorkTransition[int] = await inner.push_options(
            self.codec.encode(value), options, now, timeout=timeout)
        return result

    def delayed(self) -> list[tuple[float, PendingItem]]:
        inner: Any = self.inner
        return [(due, self._item(item)) for due, item in inner.delayed()]

    async def poll(
        self, worker: str, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[Delivery | None]:
        result, mask = await self.inner.poll(worker, now, timeout=timeout)
        return WorkTransition(self._maybe(result), mask)

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[list[Delivery]]:
        result, mask = await self.inner.poll_many(worker, n, now, timeout=timeout)
        return WorkTransition([self._item(d) for d in result], mask)

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WorkTransition[Receipt | None]:
        return await self.inner.settle(worker, delivery_id, outcome, timeout=timeout)

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WorkTransition[int]:
        return await self.inner.release(worker, delivery_ids, timeout=timeout)

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WorkTransition[bool]:
        return await self.inner.extend(worker, delivery_id, now, timeout=timeout)

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        return await self.inner.reap_expired(now, timeout=timeout)

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WorkTransition[int]:
        return await self.inner.redrive(item_ids, timeout=timeout)
