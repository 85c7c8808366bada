"""Replay positions given as times: a timezone-aware ``datetime`` as an enqueue stamp.

A topic subscriber can start at (or seek to) a time: the first retained element whose
enqueue time is at or after it. Times are timezone-aware :class:`datetime.datetime`
objects; they become stamps (milliseconds since the Unix epoch, the unit of enqueue
stamps, rounded up: an element stamped ``s`` ms is at or after ``when`` exactly when
``s >= stamp_of_time(when)``) before they reach a backend.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..errors import InvalidTimestamp


def time_position(position: Any) -> int | None:
    """The stamp of ``position`` when it is a time, ``None`` when it is another kind of
    position (``"head"``, ``"tail"``, an offset). A naive ``datetime``, a ``date`` or a
    ``float`` (an epoch time?) raises :class:`~lazily_queue.errors.InvalidTimestamp`."""
    if isinstance(position, date | float):
        return stamp_of_time(position)
    return None


def stamp_of_time(when: Any) -> int:
    """``when`` (a timezone-aware ``datetime``) as milliseconds since the epoch;
    :class:`~lazily_queue.errors.InvalidTimestamp` for anything else."""
    if not isinstance(when, datetime):
        raise InvalidTimestamp(
            f"a replay time must be a timezone-aware datetime, got {type(when).__name__}; "
            "pass e.g. datetime.now(timezone.utc) - timedelta(minutes=5)")
    if when.tzinfo is None or when.utcoffset() is None:
        raise InvalidTimestamp(
            f"replay time {when.isoformat()} is naive (no timezone): enqueue times are "
            "absolute; attach one, e.g. when.replace(tzinfo=timezone.utc)")
    micros = (when - _EPOCH) // _MICRO
    return -(-micros // 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
