"""The readers and views of :class:`~.work.WorkQueueCore`: counts, pending items,
deliveries, dead letters, enqueue stamps and id counters (a base of the core)."""

from __future__ import annotations

from collections import deque
from itertools import chain
from typing import TYPE_CHECKING, Any

from .stamps import StampIndex
from .work_items import DeadLetter, Delivery, PendingItem
from .work_retained import min_pending_id
from .work_schedule import WorkSchedule


class WorkViews:
    """What a work queue reads out; nothing here changes its state but the stamps."""

    if not TYPE_CHECKING:  # no instance dict: the core's slots hold the state
        __slots__ = ()

    _pending: deque[PendingItem]
    _in_flight: dict[int, Delivery]
    _dead: list[DeadLetter]
    _sched: WorkSchedule | None
    _stamps: StampIndex
    _trim_at: int
    _next_item_id: int
    _next_delivery_id: int

    def pending_len(self) -> int:
        """Claimable items (delayed ones are counted by :meth:`delayed_len`)."""
        sched = self._sched
        return len(self._pending) + (sched.ready if sched is not None else 0)

    def is_empty(self) -> bool:
        """Nothing claimable: in-flight and delayed items do not count."""
        return not self._pending and (self._sched is None or not self._sched.ready)

    def in_flight_len(self) -> int:
        return len(self._in_flight)

    def dead_letter_len(self) -> int:
        return len(self._dead)

    def head(self) -> PendingItem | None:
        """The pending item the next claim leases, or ``None``."""
        if self._sched is not None and self._sched.ready:
            return self._sched.ready_items()[0]
        return self._pending[0] if self._pending else None

    def pending(self) -> list[PendingItem]:
        """Claimable items in claim order (oldest first within a priority level)."""
        if self._sched is not None and self._sched.ready:
            return [*self._sched.ready_items(), *self._pending]
        return list(self._pending)

    def in_flight(self) -> list[Delivery]:
        """Live deliveries in ascending ``delivery_id``."""
        return list(self._in_flight.values())

    def dead_letters(self) -> list[DeadLetter]:
        """Dead letters in arrival order."""
        return list(self._dead)

    def in_flight_by_worker(self) -> dict[str, list[Delivery]]:
        """Live deliveries grouped by worker, each list in ascending ``delivery_id``."""
        grouped: dict[str, list[Delivery]] = {}
        for delivery in self._in_flight.values():
            grouped.setdefault(delivery.worker, []).append(delivery)
        return grouped

    def delivery(self, delivery_id: int) -> Delivery | None:
        """The live delivery with that id, or ``None``."""
        return self._in_flight.get(delivery_id)

    def stamp_of(self, item_id: int) -> int:
        """The enqueue stamp of ``item_id`` (0: unknown)."""
        return self._stamps.stamp_of(item_id) if self._stamps else 0

    def stamps(self, shared: StampIndex | None = None) -> dict[str, Any]:
        """``{"points": [[item_id, stamp], ...], "trim_at": n}``: the stamps' change
        points and the count at which the next push forgets those of items no longer
        held (kept beside a snapshot: replicas trim at the same push). The last points
        that are ``shared``'s last points too (a group's topic's) are left out:
        ``"shared_from"`` gives the first id of them."""
        first = None if shared is None else self._stamps.shared_tail(shared)
        if first is None:
            return {"points": self._stamps.points(), "trim_at": self._trim_at}
        return {"points": self._stamps.below(first).points(), "trim_at": self._trim_at,
                "shared_from": first}

    def load_stamps(self, doc: Any, shared: StampIndex | None = None) -> None:
        """Replace the stamps with :meth:`stamps` output (``None``: none), its points
        from ``shared_from`` on taken from ``shared``; ``ValueError`` when malformed."""
        if doc is None:
            doc = {"points": [], "trim_at": 64}
        if not isinstance(doc, dict) or type(doc.get("trim_at")) is not int:
            raise ValueError("work queue stamps must be {points, trim_at}")
        index = StampIndex.from_points(doc.get("points"))
        if "shared_from" in doc:
            if shared is None or type(doc["shared_from"]) is not int:
                raise ValueError("work queue stamps: those from an id on are its topic's, "
                                 "and the snapshot holds no such topic")
            index = index.then(shared, doc["shared_from"])
        self._stamps = index
        self._trim_at = doc["trim_at"]

    def _note(self, item_id: int, stamp: int) -> None:
        stamps = self._stamps
        stamps.note(item_id, stamp)
        if len(stamps) > self._trim_at:  # forget the stamps of items no longer held
            least = min_pending_id(self._pending)
            held = chain(() if least is None else (least,),
                         (d.item_id for d in self._in_flight.values()),
                         (d.item_id for d in self._dead),
                         self._sched.held() if self._sched is not None else ())
            stamps.forget_below(min(held, default=item_id))
            self._trim_at = max(64, 2 * len(stamps))

    def next_ids(self) -> tuple[int, int]:
        """The next ``(item_id, delivery_id)`` the counters will hand out."""
        return self._next_item_id, self._next_delivery_id
