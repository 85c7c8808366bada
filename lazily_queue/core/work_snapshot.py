"""Restoring a work queue's records from its plain-data snapshot, with every check.

Item ids are unique and below ``next_item_id``; delivery ids ascend below
``next_delivery_id``; workers, deadlines, attempts and dead-letter reasons are valid.
Anything else raises :class:`~lazily_queue.errors.InvalidSnapshot` naming the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import InvalidSnapshot, shown
from .snapshot import require_count, require_list, require_map
from .work_items import DeadLetter, DeadLetterReason, Delivery, PendingItem, check_now, check_worker

WORK_SNAPSHOT_KEYS = {"visibility_timeout", "max_deliveries", "next_item_id",
                      "next_delivery_id", "pending", "in_flight", "dead_letters"}
_DELIVERY_KEYS = {"delivery_id", "item_id", "value", "worker", "attempt", "deadline"}
_REASONS = {reason.value for reason in DeadLetterReason}


class WorkState(NamedTuple):
    """A work queue's records and counters, checked to be consistent."""

    next_item_id: int
    next_delivery_id: int
    pending: list[PendingItem]
    in_flight: dict[int, Delivery]
    dead_letters: list[DeadLetter]


def read_work_state(data: Mapping[str, Any]) -> WorkState:
    """The records of a snapshot map that has the :data:`WORK_SNAPSHOT_KEYS`."""
    pending: list[PendingItem] = []
    in_flight: dict[int, Delivery] = {}
    dead: list[DeadLetter] = []
    next_item = require_count("work queue snapshot: next_item_id", data["next_item_id"])
    next_delivery = require_count(
        "work queue snapshot: next_delivery_id", data["next_delivery_id"]
    )
    seen: set[int] = set()

    def item_id(where: str, value: object) -> int:
        item = require_count(f"{where}: item_id", value)
        if item >= next_item or item in seen:
            raise InvalidSnapshot(
                f"{where}: item_id {item} is duplicated or not below next_item_id {next_item}"
            )
        seen.add(item)
        return item

    for i, raw in enumerate(require_list("work queue snapshot: pending", data["pending"])):
        where = f"work queue snapshot: pending[{i}]"
        rec = require_map(where, raw, {"item_id", "value", "attempts"})
        pending.append(PendingItem(
            item_id(where, rec["item_id"]), rec["value"],
            require_count(f"{where}: attempts", rec["attempts"]),
        ))
    last = -1
    for i, raw in enumerate(require_list("work queue snapshot: in_flight", data["in_flight"])):
        where = f"work queue snapshot: in_flight[{i}]"
        rec = require_map(where, raw, _DELIVERY_KEYS)
        did = require_count(f"{where}: delivery_id", rec["delivery_id"])
        if not last < did < next_delivery:
            raise InvalidSnapshot(f"{where}: delivery_id {did} is not ascending and below "
                                  f"next_delivery_id {next_delivery}")
        last = did
        try:
            worker, deadline = check_worker(rec["worker"]), check_now(rec["deadline"])
        except (TypeError, ValueError) as exc:
            raise InvalidSnapshot(f"{where}: {exc}") from None
        in_flight[did] = Delivery(
            did, item_id(where, rec["item_id"]), rec["value"], worker,
            require_count(f"{where}: attempt", rec["attempt"], 1), deadline,
        )
    for i, raw in enumerate(
        require_list("work queue snapshot: dead_letters", data["dead_letters"])
    ):
        where = f"work queue snapshot: dead_letters[{i}]"
        rec = require_map(where, raw, {"item_id", "value", "attempts", "reason"})
        if not isinstance(rec["reason"], str) or rec["reason"] not in _REASONS:
            raise InvalidSnapshot(f"{where}: reason must be 'nack' or 'expired', "
                                  f"got {shown(rec['reason'])}")
        dead.append(DeadLetter(
            item_id(where, rec["item_id"]), rec["value"],
            require_count(f"{where}: attempts", rec["attempts"], 1),
            DeadLetterReason(rec["reason"]),
        ))
    return WorkState(next_item, next_delivery, pending, in_flight, dead)
