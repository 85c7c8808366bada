"""The value model on a broker, as on a node: a value of the model comes back equal and
of the same types (a tuple stays a tuple), and one outside it is refused at the call
with ``UnsupportedValue``, nothing stored, instead of arriving as ``Undecodable``."""

from __future__ import annotations

import collections
import datetime
import enum
import uuid
from decimal import Decimal
from typing import Any

import pytest

from lazily_queue import QueueCell, TopicCell, UnsupportedValue, WorkQueueCell

from .conftest import fresh


class Level(enum.IntEnum):
    HIGH = 1


def _nested(levels: int) -> Any:
    """``levels`` lists one in the other."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


MODEL = [
    (1, "a"),
    {"pair": (2, [3, (4,)]), b"raw": {"x", "y"}},
    datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    datetime.date(2024, 1, 2),
    Decimal("1.50"),
    uuid.UUID(int=5),
    2**4095,
    _nested(45),
]

OUTSIDE = [
    {1: 2},
    {1, 2},
    frozenset({"a"}),
    Level.HIGH,
    collections.OrderedDict(a=1),
    Decimal("NaN"),
    datetime.datetime(2024, 1, 1),
    2**5000,
    1j,
    _nested(46),
    "\ud800",  # a lone surrogate: no UTF-8 string
    ["x", {"k\udfff": 1}],
]


def _same(got: Any, want: Any) -> bool:
    """Equal, and of the same types all the way down."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list | tuple):
        return len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    return bool(got == want)


async def test_values_of_the_model_come_back_equal_and_of_the_same_types(
        provider: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("values")))
    jobs = WorkQueueCell(provider.work_queue(fresh("values"), visibility_timeout=30,
                                             max_deliveries=3))
    topic = TopicCell(provider.topic(fresh("values")))
    await topic.subscribe("reader")
    for value in MODEL:
        await q.push(value)
        await jobs.push(value)
        await topic.publish(value)
    for value in MODEL:
        assert _same(await q.pop(timeout=10), value)
        assert _same((await jobs.claim("w", timeout=10)).value, value)
        assert _same(await topic.advance("reader", timeout=10), value)


@pytest.mark.parametrize("value", OUTSIDE, ids=lambda v: type(v).__name__)
async def test_a_value_outside_the_model_is_refused_and_nothing_is_stored(
        provider: Any, value: Any) -> None:
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("outside")))
    jobs = WorkQueueCell(provider.work_queue(fresh("outside"), visibility_timeout=30,
                                             max_deliveries=3))
    topic = TopicCell(provider.topic(fresh("outside")))
    with pytest.raises(UnsupportedValue, match=r"in a broker.*serializer="):
        await q.push(value)
    with pytest.raises(UnsupportedValue):
        await jobs.push(value)
    with pytest.raises(UnsupportedValue):
        await topic.publish(value)
    for storage in (q.storage, jobs.storage, topic.storage):
        await storage.sync()  # type: ignore[attr-defined]
    assert q.len() == 0 and jobs.pending_len() == 0 and topic.end_offset() == 0
