"""Flavor-neutral TopicCell rules: the broadcast log, subscriber cursors and retention.

State is ``(base_offset, elements, subscriptions)``. Cursors are absolute offsets (the
next offset to read) and ``end_offset = base_offset + len(elements)``. Every mutating
method returns a :class:`TopicTransition`: its result plus the subscriber ids whose
reader must be invalidated. Invalidation is structural: a subscribe on an empty log or
a disconnect at the tail still names the subscriber.

:class:`TopicCore` imports nothing reactive, so a replicated state machine can run the
very same rules on every replica.

Ephemeral cursors and GC: only durable cursors (connected or not) hold the retention
frontier, so GC may drop offsets an ephemeral subscriber has not read yet. ``gc``
clamps such an ephemeral cursor up to the new ``base_offset`` and invalidates that
subscriber's reader, so the gap is visible to it; no stored cursor is ever below
``base_offset``. A durable cursor can never fall below base, because it bounds the
frontier.

An element's offset is its message id; ``publish(value, stamp)`` records its enqueue
stamp (milliseconds) in a :class:`~.stamps.StampIndex` (``stamp_of(offset)``; 0 when
published without one), which GC trims with the elements. The stamps are not part of
:meth:`TopicCore.snapshot` (the spec's shape): owners keep them with :meth:`stamps`.

Ids of unknown subscribers are no-ops for ``reconnect``, ``disconnect``,
``delete_subscriber``, ``advance`` and ``seek`` (they never raise for the id), and reads
of them are unavailable (``None``, distinct from ``[]``).

Replay: a new subscription starts at the tail (default), the head (the oldest retained
element) or an absolute offset in ``base_offset..end_offset``; ``seek`` moves a connected
cursor anywhere in that range later, backward or forward. Any position outside it raises
:class:`~lazily_queue.errors.OffsetOutOfRange` naming the retained range, and changes
nothing. A start applies only to a new subscription: an existing one keeps its cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from ..errors import InvalidSnapshot, shown
from .snapshot import require_count, require_list, require_map
from .stamps import StampIndex
from .topic_subscriptions import (
    Durability,
    Start,
    SubscribeOutcome,
    SubscriberId,
    Subscription,
    TopicTransition,
    check_start,
    check_subscriber,
    out_of_range,
    parse_durability,
    position,
    restore_subscription,
)

R = TypeVar("R")

NOBODY: frozenset[str] = frozenset()


class TopicCore(Generic[R]):
    """The topic state machine: one log, many cursors, durable-driven retention."""

    __slots__ = ("_base", "_connected", "_connected_set", "_elements", "_stamps", "_subs",
                 "lineage")

    def __init__(self) -> None:
        #: Shared by the topics whose every offset holds the same object (this one, and
        #: a copy of it with limits): a log restored from plain data has its own.
        self.lineage = object()
        self._base = 0
        self._elements: list[R] = []
        self._stamps = StampIndex()
        self._subs: dict[str, Subscription] = {}
        self._connected: dict[str, None] = {}
        self._connected_set: frozenset[str] | None = NOBODY

    def __repr__(self) -> str:
        return (
            f"TopicCore(base={self._base}, len={len(self._elements)}, "
            f"subscriptions={len(self._subs)})"
        )

    # -- connection bookkeeping -----------------------------------------------------------

    def _set_connected(self, subscriber: str, connected: bool) -> None:
        if connected:
            self._connected[subscriber] = None
        else:
            self._connected.pop(subscriber, None)
        self._connected_set = None

    def connected_subscribers(self) -> frozenset[str]:
        """The ids of every connected subscription."""
        cached = self._connected_set
        if cached is None:
            cached = self._connected_set = frozenset(self._connected)
        return cached

    # -- operations -----------------------------------------------------------------------

    def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE,
        start: Start = "tail",
    ) -> TopicTransition[SubscribeOutcome]:
        """New id: cursor at ``start`` (the tail unless given). Offline durable id:
        reconnect at its cursor. Connected: no-op. ``start`` is checked for a new id
        only (:class:`OffsetOutOfRange` outside the retained range)."""
        check_subscriber(subscriber)
        check_start(start)
        kind = parse_durability(durability)
        record = self._subs.get(subscriber)
        if record is None:
            cursor = position(start, self._base, self.end_offset())
            self._subs[subscriber] = Subscription(cursor, kind, True)
            self._set_connected(subscriber, True)
            return TopicTransition(SubscribeOutcome.Subscribed, frozenset((subscriber,)))
        if record.connected:
            return TopicTransition(SubscribeOutcome.AlreadyConnected, NOBODY)
        record.connected = True
        self._set_connected(subscriber, True)
        return TopicTransition(SubscribeOutcome.Reconnected, frozenset((subscriber,)))

    def reconnect(self, subscriber: str) -> TopicTransition[bool]:
        """Bring an offline durable subscription back at its frozen cursor."""
        check_subscriber(subscriber)
        record = self._subs.get(subscriber)
        if record is None or record.connected:
            return TopicTransition(False, NOBODY)
        record.connected = True
        self._set_connected(subscriber, True)
        return TopicTransition(True, frozenset((subscriber,)))

    def disconnect(self, subscriber: str) -> TopicTransition[bool]:
        """Durable: go offline with the cursor frozen. Ephemeral: remove the record."""
        check_subscriber(subscriber)
        record = self._subs.get(subscriber)
        if record is None or not record.connected:
            return TopicTransition(False, NOBODY)
        if record.durability is Durability.EPHEMERAL:
            del self._subs[subscriber]
        else:
            record.connected = False
        self._set_connected(subscriber, False)
        return TopicTransition(True, frozenset((subscriber,)))

    def delete_subscriber(self, subscriber: str) -> TopicTransition[bool]:
        """Forget the subscription (durable or ephemeral, connected or not): it no longer
        holds the retention frontier nor counts as a subscription, and a later
        ``subscribe`` of the id starts afresh. ``False`` (no change) when unknown."""
        check_subscriber(subscriber)
        record = self._subs.pop(subscriber, None)
        if record is None:
            return TopicTransition(False, NOBODY)
        if record.connected:
            self._set_connected(subscriber, False)
        return TopicTransition(True, frozenset((subscriber,)))

    def publish(self, value: R, stamp: int | None = None) -> TopicTransition[int]:
        """Append one element (enqueue ``stamp``, ms, when given); returns its offset and
        invalidates every connected reader."""
        offset = self.end_offset()
        if stamp is not None:
            self._stamps.note(offset, stamp)
        self._elements.append(value)
        return TopicTransition(offset, self.connected_subscribers())

    def advance(self, subscriber: str) -> TopicTransition[R | None]:
        """Consume the element at the cursor; ``None`` (and no change) when unavailable."""
        check_subscriber(subscriber)
        record = self._subs.get(subscriber)
        if record is None or not record.connected:
            return TopicTransition(None, NOBODY)
        index = record.cursor - self._base
        if index >= len(self._elements):
            return TopicTransition(None, NOBODY)
        record.cursor += 1
        return TopicTransition(self._elements[index], frozenset((subscriber,)))

    def advance_to(self, subscriber: str, offset: int) -> TopicTransition[int | None]:
        """Move a connected subscriber's cursor forward to ``offset`` (clamped to the
        end): everything before it is consumed. Returns the cursor, or ``None`` when the
        subscriber is unknown or offline; a cursor already at or past ``offset`` stays."""
        check_subscriber(subscriber)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {shown(offset)}")
        record = self._subs.get(subscriber)
        if record is None or not record.connected:
            return TopicTransition(None, NOBODY)
        target = min(offset, self.end_offset())
        if target <= record.cursor:
            return TopicTransition(record.cursor, NOBODY)
        record.cursor = target
        return TopicTransition(target, frozenset((subscriber,)))

    def seek(self, subscriber: str, offset: int) -> TopicTransition[int | None]:
        """Move a connected subscriber's cursor to ``offset``, backward or forward within
        the retained range (:class:`OffsetOutOfRange` outside it, nothing changed).
        Returns the cursor, or ``None`` when the subscriber is unknown or offline."""
        check_subscriber(subscriber)
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError(f"offset must be an int, got {shown(offset)}")
        record = self._subs.get(subscriber)
        if record is None or not record.connected:
            return TopicTransition(None, NOBODY)
        target = position(offset, self._base, self.end_offset())
        if target == record.cursor:
            return TopicTransition(target, NOBODY)
        record.cursor = target
        return TopicTransition(target, frozenset((subscriber,)))

    def cursor(self, subscriber: str) -> int | None:
        """The subscriber's cursor, or ``None`` when it is unknown."""
        record = self._subs.get(subscriber)
        return None if record is None else record.cursor

    def gc(self) -> TopicTransition[int]:
        """Drop offsets below the min durable cursor (or all, with no durable subscriber).

        Invalidates only ephemeral subscribers whose cursor had to be clamped to the new
        base (their unread elements were collected).
        """
        frontier = self.retention_frontier()
        removed = frontier - self._base
        self._stamps.forget_below(frontier)
        if removed <= 0:
            return TopicTransition(0, NOBODY)
        del self._elements[:removed]
        self._base = frontier
        clamped = []
        for subscriber, record in self._subs.items():
            if record.cursor < frontier:
                record.cursor = frontier
                clamped.append(subscriber)
        return TopicTransition(removed, frozenset(clamped))

    def drop_before(self, offset: int) -> TopicTransition[dict[str, int]]:
        """Drop every offset below ``offset`` (retention by age) whatever the cursors;
        returns ``{subscriber: elements it had not read}`` for the cursors moved up to
        the new base (each invalidated)."""
        frontier = min(offset, self.end_offset())
        removed = frontier - self._base
        if removed <= 0:
            return TopicTransition({}, NOBODY)
        del self._elements[:removed]
        self._base = frontier
        self._stamps.forget_below(frontier)
        skipped: dict[str, int] = {}
        for subscriber, record in self._subs.items():
            if record.cursor < frontier:
                skipped[subscriber] = frontier - record.cursor
                record.cursor = frontier
        return TopicTransition(skipped, frozenset(skipped))

    # -- observables ----------------------------------------------------------------------

    def retention_frontier(self) -> int:
        """Min cursor over durable subscriptions (online or not), else ``end_offset``."""
        durable = [r.cursor for r in self._subs.values() if r.durability is Durability.DURABLE]
        return min(durable) if durable else self.end_offset()

    def read(self, subscriber: str) -> R | None:
        """The element at the cursor; ``None`` when unavailable or at the tail."""
        record = self._subs.get(subscriber)
        if record is None or not record.connected:
            return None
        index = record.cursor - self._base
        return self._elements[index] if index < len(self._elements) else None

    def read_stream(self, subscriber: str, limit: int | None = None) -> list[R] | None:
        """The unread suffix (its first ``limit`` elements); ``None`` (not ``[]``) for an
        unknown or offline subscriber."""
        record = self._subs.get(subscriber)
        if record is None or not record.connected:
            return None
        start = record.cursor - self._base
        return self._elements[start:] if limit is None else self._elements[start:start + limit]

    def base_offset(self) -> int:
        return self._base

    def stamp_of(self, offset: int) -> int:
        """The enqueue stamp of the element at ``offset`` (0: unknown)."""
        return self._stamps.stamp_of(offset)

    def offset_at(self, stamp: int) -> int:
        """The offset of the first retained element enqueued at or after ``stamp`` (ms),
        or ``end_offset()`` when there is none (a time position is never out of range)."""
        return self._stamps.first_at_or_after(stamp, self._base, self.end_offset())

    def stamps(self) -> list[list[int]]:
        """The stamps' change points ``[[offset, stamp], ...]`` (kept beside a snapshot)."""
        return self._stamps.points()

    def stamp_index(self) -> StampIndex:
        """The stamps themselves (for reading: a group's may share their last points)."""
        return self._stamps

    def load_stamps(self, points: Any) -> None:
        """Replace the stamps with :meth:`stamps` output; ``ValueError`` when malformed."""
        self._stamps = StampIndex.from_points(points)

    def end_offset(self) -> int:
        return self._base + len(self._elements)

    def elements(self) -> list[R]:
        """A copy of the retained log, oldest first."""
        return list(self._elements)

    def elements_from(self, offset: int) -> list[R]:
        """A copy of the retained log from ``offset`` (at least the base) on."""
        return self._elements[max(0, offset - self._base):]

    def elements_between(self, first: int, end: int) -> list[R]:
        """A copy of the elements at offsets ``first..end - 1``, all retained
        (:class:`InvalidSnapshot` otherwise: a snapshot referred to them)."""
        if not self._base <= first <= end <= self.end_offset():
            raise InvalidSnapshot(f"offsets {first}..{end - 1} are not all retained by the "
                                  f"topic ({self._base}..{self.end_offset() - 1})")
        return self._elements[first - self._base:end - self._base]

    def stamps_between(self, first: int, end: int) -> StampIndex:
        """The stamps of offsets ``first..end - 1`` as their own index
        (:meth:`~.stamps.StampIndex.between`)."""
        return self._stamps.between(first, end)

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        """Every record as ``{id: {durability, connected, cursor}}``."""
        return {sub: record.to_dict() for sub, record in self._subs.items()}

    def subscription_count(self) -> int:
        """How many subscriptions (durable and ephemeral, connected or not) there are."""
        return len(self._subs)

    def subscription(self, subscriber: str) -> dict[str, Any] | None:
        """One record as ``{durability, connected, cursor}``, or ``None`` when unknown."""
        record = self._subs.get(subscriber)
        return None if record is None else record.to_dict()

    # -- snapshot -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The full state as plain data: ``{base_offset, elements, subscriptions}``."""
        return {
            "base_offset": self._base,
            "elements": list(self._elements),
            "subscriptions": self.subscriptions(),
        }

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any]) -> TopicCore[R]:
        """Restore :meth:`snapshot` output; raises :class:`InvalidSnapshot` when inconsistent."""
        data = require_map("topic snapshot", snapshot, {"base_offset", "elements", "subscriptions"})
        base = require_count("topic snapshot: base_offset", data["base_offset"])
        elements = require_list("topic snapshot: elements", data["elements"])
        subs = data["subscriptions"]
        if not isinstance(subs, Mapping):
            raise InvalidSnapshot(
                f"topic snapshot: subscriptions must be a map, got {type(subs).__name__}"
            )
        core: TopicCore[R] = cls()
        core._base = base
        core._elements = elements
        end = core.end_offset()
        for subscriber, raw in subs.items():
            record = restore_subscription(subscriber, raw, base, end)
            core._subs[subscriber] = record
            if record.connected:
                core._connected[subscriber] = None
        core._connected_set = None
        return core


__all__ = [
    "NOBODY",
    "Durability",
    "Start",
    "SubscribeOutcome",
    "SubscriberId",
    "TopicCore",
    "TopicTransition",
    "check_start",
    "check_subscriber",
    "out_of_range",
    "parse_durability",
    "position",
]
