"""Message: one element as a consumer receives it, with its id and enqueue time.

One naming rule across the cells: ``id`` is the message id the cell assigned when the
element was committed (a queue's counter, a topic's offset, a work queue's item id),
``enqueued_at`` the time it was committed (seconds since the epoch: the leader's clock
on a replicated backend, the cell's clock on a local one; ``None`` when the backend has
no clock), ``delivery_count`` how many times it has been handed out, this time included,
``headers`` the string headers it was pushed with (a read-only mapping; empty when none).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..core import ids
from ..core.headers import NO_HEADERS, view
from ..core.ids import Run

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Message(Generic[T]):
    """An element with its message id, enqueue time, delivery count and headers."""

    id: int
    value: T
    enqueued_at: float | None
    delivery_count: int = 1
    headers: Mapping[str, str] = NO_HEADERS


def enqueued_at(stamp: int | float) -> float | None:
    """A stamp (milliseconds; 0: unknown) as seconds since the epoch, or ``None``."""
    return None if not stamp else stamp / 1000


def stamp_of(message: Message[Any]) -> int:
    """The stamp (milliseconds; 0: unknown) of ``message``'s enqueue time."""
    return 0 if message.enqueued_at is None else round(message.enqueued_at * 1000)


def messages_of(values: list[T], runs: list[Run],
                headers: list[list[Any]] | None = None) -> list[Message[T]]:
    """The messages of ``values`` popped together with the id runs ``runs`` (and the
    ``[[id, headers], ...]`` of those that have some)."""
    stamps: Iterator[tuple[int, int]] = ids.expand(runs)
    if not headers:
        return [Message(i, value, enqueued_at(stamp))
                for value, (i, stamp) in zip(values, stamps, strict=True)]
    by_id = {i: h for i, h in headers}
    return [Message(i, value, enqueued_at(stamp), 1, view(by_id.get(i)))
            for value, (i, stamp) in zip(values, stamps, strict=True)]


def headers_of(messages: list[Message[Any]]) -> list[list[Any]]:
    """``[[id, headers], ...]`` of the messages that have headers."""
    return [[m.id, dict(m.headers)] for m in messages if m.headers]
