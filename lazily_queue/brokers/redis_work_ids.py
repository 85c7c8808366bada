"""The ids of a Redis work queue: an item's id is its stream entry id ``ms-seq`` as one
int, and a delivery's id is its item's id with the entry's delivery count."""

from __future__ import annotations

from typing import Any

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
