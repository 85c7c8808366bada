"""The vocabulary of a topic's subscriptions: subscriber ids, durability, where a new
cursor starts, what a subscribe did, the transition type, and the subscription record
with its snapshot form (checked on restore)."""

from __future__ import annotations

import enum
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from ..errors import InvalidSnapshot, OffsetOutOfRange, shown
from .snapshot import is_int, require_map

R = TypeVar("R")

SubscriberId = str
"""Subscriber ids are strings (they key the JSON snapshot map)."""

Start = Literal["head", "tail"] | int
"""Where a new cursor starts: ``"tail"`` (the next element published), ``"head"`` (the
oldest retained element) or an absolute offset."""


class Durability(enum.StrEnum):
    """Whether a subscription survives disconnect (and holds the retention frontier)."""

    DURABLE = "durable"
    EPHEMERAL = "ephemeral"

    @classmethod
    def _missing_(cls, value: object) -> Durability:
        raise ValueError(f"durability must be \"durable\" or \"ephemeral\", got {shown(value)}")


class SubscribeOutcome(enum.Enum):
    """What ``subscribe`` did."""

    Subscribed = "Subscribed"
    Reconnected = "Reconnected"
    AlreadyConnected = "AlreadyConnected"


class TopicTransition(NamedTuple, Generic[R]):
    """The result of one topic operation and the subscribers it invalidates."""

    result: R
    invalidated: frozenset[str]


class Subscription:
    """One subscriber's cursor, durability and connection state."""

    __slots__ = ("connected", "cursor", "durability")

    def __init__(self, cursor: int, durability: Durability, connected: bool) -> None:
        self.cursor = cursor
        self.durability = durability
        self.connected = connected

    def to_dict(self) -> dict[str, Any]:
        return {
            "durability": self.durability.value,
            "connected": self.connected,
            "cursor": self.cursor,
        }


def parse_durability(value: Durability | str) -> Durability:
    """``Durability`` from the enum or its spelling; anything else raises ``ValueError``."""
    try:
        return Durability(value)
    except ValueError:
        raise ValueError(
            f"durability must be 'durable' or 'ephemeral', got {shown(value)}"
        ) from None


def check_start(start: object) -> Start:
    """``start`` as a :data:`Start`; anything else raises ``ValueError``."""
    if start in ("head", "tail"):
        return start  # type: ignore[return-value]
    if isinstance(start, bool) or not isinstance(start, int):
        raise ValueError(f"start must be 'head', 'tail' or an offset (int), got {shown(start)}")
    return start


def position(start: Start, base: int, end: int) -> int:
    """The offset ``start`` names in a log retaining ``base..end`` (``end`` is the tail);
    :class:`OffsetOutOfRange` when it lies outside."""
    if start == "tail":
        return end
    if start == "head":
        return base
    offset = check_start(start)
    assert isinstance(offset, int)
    if not base <= offset <= end:
        raise out_of_range(offset, base, end)
    return offset


def out_of_range(offset: int, base: int, end: int) -> OffsetOutOfRange:
    """The error for ``offset`` outside a log retaining ``base..end``."""
    where = ("before the oldest retained element (the elements before it were collected)"
             if offset < base else "past the tail (no element has that offset yet)")
    return OffsetOutOfRange(
        f"offset {offset} is {where}: the topic retains offsets {base}..{end} "
        f"({end} is the tail, the next element's offset); ask for an offset from {base} "
        f"to {end}", offset=offset, base=base, end=end)


def check_subscriber(subscriber: object) -> str:
    """A subscriber id must be a ``str``; anything else raises ``TypeError``."""
    if not isinstance(subscriber, str):
        raise TypeError(f"subscriber id must be a str, got {type(subscriber).__name__}")
    return subscriber

def restore_subscription(subscriber: object, raw: object, base: int, end: int) -> Subscription:
    """One subscription record of a topic snapshot, checked against ``base..end``."""
    if not isinstance(subscriber, str):
        raise InvalidSnapshot(f"topic snapshot: subscriber id {shown(subscriber)} is not a str")
    where = f"topic snapshot: subscription {shown(subscriber)}"
    data = require_map(where, raw, {"durability", "connected", "cursor"})
    try:
        kind = parse_durability(data["durability"])
    except ValueError as exc:
        raise InvalidSnapshot(f"{where}: {exc}") from None
    connected, cursor = data["connected"], data["cursor"]
    if not isinstance(connected, bool):
        raise InvalidSnapshot(f"{where}: connected must be a bool, got {shown(connected)}")
    if not is_int(cursor) or not base <= cursor <= end:
        raise InvalidSnapshot(f"{where}: cursor {shown(cursor)} is outside base..end "
                              f"({base}..{end})")
    if kind is Durability.EPHEMERAL and not connected:
        raise InvalidSnapshot(f"{where}: an ephemeral subscription cannot be disconnected")
    return Subscription(cursor, kind, connected)
