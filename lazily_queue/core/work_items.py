"""The records of a work queue: pending items, deliveries, dead letters and receipts.

Plain frozen values (``to_dict`` gives the fixture shape), plus the checks of a
worker id and a caller-supplied time.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import shown
from .numbers import MAX_TIME, is_finite


class DeadLetterReason(enum.StrEnum):
    """Why an item was dead-lettered."""

    NACK = "nack"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class PendingItem:
    """A pending item; ``attempts`` counts the deliveries already made."""

    item_id: int
    value: Any
    attempts: int

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "value": self.value, "attempts": self.attempts}


@dataclass(frozen=True, slots=True)
class Delivery:
    """One lease of an item to a worker; ``attempt`` is 1-based, live while ``now <= deadline``.

    ``enqueued`` is the item's enqueue stamp (milliseconds; 0: unknown); it is not part of
    :meth:`to_dict` (the spec's shape) nor of equality.
    """

    delivery_id: int
    item_id: int
    value: Any
    worker: str
    attempt: int
    deadline: float
    enqueued: int = field(default=0, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "delivery_id": self.delivery_id,
            "item_id": self.item_id,
            "value": self.value,
            "worker": self.worker,
            "attempt": self.attempt,
            "deadline": self.deadline,
        }


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An item that failed its last allowed delivery; ``attempts`` is that delivery's attempt."""

    item_id: int
    value: Any
    attempts: int
    reason: DeadLetterReason

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "value": self.value,
            "attempts": self.attempts,
            "reason": self.reason.value,
        }


def as_dicts(records: Iterable[Any]) -> list[dict[str, Any]]:
    """The ``to_dict`` of each record (the snapshot shape)."""
    return [record.to_dict() for record in records]


def given_now(now: float | None) -> float | None:
    """``now`` as a replicated op carries it: ``None`` (the leader's stamp) or a checked
    time (:func:`check_now`) of whole milliseconds, the replicated queue's unit, so a bad
    one is refused at the call, not where it applies (a fraction would be cut off there,
    and leases would end otherwise than a local queue's given the same times)."""
    if now is None:
        return None
    checked = check_now(now)
    if checked != int(checked):
        raise ValueError(f"now must be whole milliseconds on a node or a client (the "
                         f"replicated queue's unit: the leader's milliseconds since the "
                         f"Unix epoch, e.g. round(time.time() * 1000); leave now= out for "
                         f"the leader's own), got {shown(now)}")
    return checked


def check_now(now: object) -> float:
    """A logical time: a finite int or float >= 0, else ``TypeError``/``ValueError``."""
    if isinstance(now, bool) or not isinstance(now, int | float):
        raise TypeError(f"now must be an int or float, got {type(now).__name__}")
    if not is_finite(now) or not 0 <= now <= MAX_TIME:
        raise ValueError(f"now must be a finite time from 0 to 2**53, got {shown(now)}")
    return now


def check_delivery_id(delivery_id: object) -> int:
    """A delivery id is an int; anything else raises ``TypeError``."""
    if isinstance(delivery_id, bool) or not isinstance(delivery_id, int):
        raise TypeError(f"delivery_id must be an int, got {type(delivery_id).__name__}")
    return delivery_id


def check_count(n: object) -> int:
    """How many to take at once: an int >= 1, else ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {shown(n)}")
    return n


def check_worker(worker: object) -> str:
    if not isinstance(worker, str):
        raise TypeError(f"worker must be a str, got {type(worker).__name__}")
    return worker


@dataclass(frozen=True)
class Receipt:
    """Proof of a committed settlement: which delivery, by whom, how and when.

    ``duplicate`` is True when the settlement had already been made (a retry) and this
    is the receipt recorded the first time.
    """

    queue: str
    delivery_id: int
    item_id: int
    worker: str
    outcome: str
    settled_at: float
    duplicate: bool = False

    def to_list(self) -> list[Any]:
        return [self.delivery_id, self.item_id, self.worker, self.outcome, self.settled_at]
