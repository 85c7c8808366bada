"""Restoring a work queue's records from its plain-data snapshot, with every check.

Item ids are unique and below ``next_item_id``; delivery ids ascend below
``next_delivery_id``; workers, deadlines, attempts and dead-letter reasons are valid.
Anything else raises :class:`~lazily_queue.errors.InvalidSnapshot` naming the record.

A consumer group's pending items may hold a run of retained values
(:class:`~.work_retained.RetainedPending`): the optional ``run`` is
``[at, first, count, values]``, the items ``first..first + count - 1`` (never delivered)
after the first ``at`` of ``pending``; ``values`` are those of the first ones, the
others' are the owner's to give (:data:`RunValues`: a group's are its topic's elements
at those offsets).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..errors import InvalidSnapshot, shown
from .snapshot import require_count, require_list, require_map
from .work_items import DeadLetter, DeadLetterReason, Delivery, PendingItem, check_now, check_worker

WORK_SNAPSHOT_KEYS = {"visibility_timeout", "max_deliveries", "next_item_id",
                      "next_delivery_id", "pending", "in_flight", "dead_letters"}
_DELIVERY_KEYS = {"delivery_id", "item_id", "value", "worker", "attempt", "deadline"}
_REASONS = {reason.value for reason in DeadLetterReason}
#: The values of the items ``lo..hi - 1`` of a snapshot's run it does not hold:
#: ``values(lo, hi)``, raising :class:`InvalidSnapshot` when the owner has none.
RunValues = Callable[[int, int], list[Any]]


class WorkState(NamedTuple):
    """A work queue's records and counters, checked to be consistent."""

    next_item_id: int
    next_delivery_id: int
    pending: list[PendingItem]
    in_flight: dict[int, Delivery]
    dead_letters: list[DeadLetter]
    #: ``(at, first, values)``: the run of never-delivered items after ``pending[:at]``.
    run: tuple[int, int, list[Any]] | None = None

    def holds(self, item_id: int) -> bool:
        """Whether ``item_id`` is one of the run's."""
        return self.run is not None and 0 <= item_id - self.run[1] < len(self.run[2])


def _read_run(raw: object, pending: int, next_item: int, given: RunValues | None
              ) -> tuple[int, int, list[Any]]:
    where = "work queue snapshot: run"
    if not isinstance(raw, list | tuple) or len(raw) != 4:
        raise InvalidSnapshot(f"{where} must be [at, first, count, values], "
                              f"got a {type(raw).__name__}")
    at, first = require_count(f"{where}: at", raw[0]), require_count(f"{where}: first", raw[1])
    count = require_count(f"{where}: count", raw[2], 1)
    values = require_list(f"{where}: values", raw[3])
    if at > pending or first + count > next_item or len(values) > count:
        raise InvalidSnapshot(f"{where}: {count} items from {first} after {at} pending items "
                              f"({len(values)} values) do not fit {pending} pending items "
                              f"and next_item_id {next_item}")
    if len(values) < count:
        lo = first + len(values)
        if given is None:
            raise InvalidSnapshot(f"{where}: the values of items {lo}..{first + count - 1} "
                                  "are not in it (its topic holds them): restore the work "
                                  "queue with its topic's state machine")
        values += given(lo, first + count)
    return at, first, values


def read_work_state(data: Mapping[str, Any], run_values: RunValues | None = None
                    ) -> WorkState:
    """The records of a snapshot map that has the :data:`WORK_SNAPSHOT_KEYS` (and may
    have ``run``, whose values it does not hold given by ``run_values``)."""
    pending: list[PendingItem] = []
    in_flight: dict[int, Delivery] = {}
    dead: list[DeadLetter] = []
    next_item = require_count("work queue snapshot: next_item_id", data["next_item_id"])
    next_delivery = require_count(
        "work queue snapshot: next_delivery_id", data["next_delivery_id"]
    )
    seen: set[int] = set()
    listed = require_list("work queue snapshot: pending", data["pending"])
    run = None if "run" not in data else _read_run(data["run"], len(listed), next_item,
                                                   run_values)
    lo, hi = (0, 0) if run is None else (run[1], run[1] + len(run[2]))

    def item_id(where: str, value: object) -> int:
        item = require_count(f"{where}: item_id", value)
        if item >= next_item or item in seen or lo <= item < hi:
            raise InvalidSnapshot(
                f"{where}: item_id {item} is duplicated or not below next_item_id {next_item}"
            )
        seen.add(item)
        return item

    for i, raw in enumerate(listed):
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
    return WorkState(next_item, next_delivery, pending, in_flight, dead, run)
