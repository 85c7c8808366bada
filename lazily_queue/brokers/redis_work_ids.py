"""The ids of a Redis work queue: an item's id is its stream entry id ``ms-seq`` as one
int, and a delivery's id is its item's id with the entry's delivery count; a worker's
name is its consumer's in the group, where names starting with ``lq.`` are the
library's own."""

from __future__ import annotations

from typing import Any

from ..core.work_items import check_worker
from ..errors import InvalidName, shown

_SEQ_BITS = 20
_COUNT_BITS = 10
#: The most deliveries an item may have (its delivery count is part of the delivery id).
MAX_DELIVERIES_LIMIT = (1 << _COUNT_BITS) - 2


def text_of(raw: Any) -> str:
    """A reply's bytes (or other value) as text."""
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def item_id(entry: Any) -> int:
    """The item id of the stream entry id ``ms-seq``."""
    ms, seq = text_of(entry).split("-")
    return (int(ms) << _SEQ_BITS) | int(seq)


def entry_id(item: int) -> str:
    return f"{item >> _SEQ_BITS}-{item & ((1 << _SEQ_BITS) - 1)}"


def delivery_id(item: int, count: int) -> int:
    return (item << _COUNT_BITS) | count


def item_of(delivery: int) -> int:
    """The item id of the delivery id ``delivery``."""
    return delivery >> _COUNT_BITS


def split_delivery(delivery: int) -> tuple[str, int] | None:
    if isinstance(delivery, bool) or not isinstance(delivery, int) or delivery < 0:
        return None
    return entry_id(delivery >> _COUNT_BITS), delivery & ((1 << _COUNT_BITS) - 1)


def may_hold_leases(worker: object) -> bool:
    """Whether a claim could have leased to ``worker`` (``TypeError`` for no str, as on
    every backend): an empty name or one starting with ``lq.`` never holds a lease."""
    check_worker(worker)
    return not _reserved(worker)


def _reserved(worker: object) -> bool:
    return not isinstance(worker, str) or not worker or worker.startswith("lq.")


def check_claimed_worker(worker: object) -> None:
    """Raise :class:`InvalidName` for a worker name no claim takes (the group's
    consumers named ``lq.`` are the library's own)."""
    if _reserved(worker):
        raise InvalidName("worker must be a non-empty str not starting with 'lq.' (the "
                          f"library's own consumers), got {shown(worker)}")
