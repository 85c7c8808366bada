"""The value model: values come back equal and of the same types from local and
replicated cells alike; others are refused by name; ``serializer=`` carries the rest."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from decimal import Decimal
from typing import Any, NamedTuple

import pytest

from lazily_queue import (
    MessageTooLarge,
    QueueCell,
    TopicCell,
    UnsupportedValue,
    WorkQueueCell,
    serializer,
    testing,
)

UTC = datetime.UTC
MODEL_VALUES: list[Any] = [
    None, True, 0, -7, 2**200, 1.5, "", "caf\u00e9", b"\x00\xff", [], (), [1, (2, 3)],
    (1, [2, (3, "x")], {"k": (None,)}), {"a": {"b": [1.0]}, "c": b""}, {b"k": 1},
    {"x", "y"}, datetime.datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
    datetime.date(2024, 5, 1), Decimal("12.50"), uuid.UUID(int=7),
    ("order", 7, {"lines": [("sku-1", 2)]}),
]


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same type at every level."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


async def test_every_model_value_round_trips_alike_on_every_backend() -> None:
    local: QueueCell[Any] = QueueCell()
    for value in MODEL_VALUES:
        await local.push(value)
    from_local = [await local.pop() for _ in MODEL_VALUES]
    async with testing.cluster(3) as c:
        producer, consumer = await c.followers()
        q = producer.queue("values")
        for value in MODEL_VALUES:
            await q.push(value)
        await c.settle()
        replicated = [await consumer.queue("values").pop() for _ in MODEL_VALUES]
        topic, jobs = producer.topic("t"), producer.work_queue("w")
        await topic.subscribe("s")
        await topic.publish(("a", (1,)))
        await jobs.push(("job", [("x", 1)]))
        assert same(await topic.poll("s"), ("a", (1,)))
        assert same((await jobs.claim("w1")).value, ("job", [("x", 1)]))
    for value, a, b in zip(MODEL_VALUES, from_local, replicated, strict=True):
        assert same(value, a) and same(value, b), (value, a, b)


class Colour(enum.IntEnum):
    RED = 1


class Point(NamedTuple):
    x: int
    y: int


@dataclasses.dataclass
class Order:
    id: int
    lines: list[str]


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (Order(1, []), "test_values.Order is not a replicated type"),
        (Colour.RED, "Colour is a subclass of int and would come back as a plain int"),
        (Point(1, 2), "Point is a subclass of tuple and would come back as a plain tuple"),
        ({"when": datetime.datetime(2024, 1, 1)}, "naive datetime 2024-01-01T00:00:00"),
        (frozenset({"a"}), "builtins.frozenset is not a replicated type"),
        ([1, {2: "two"}], "dict key 2 is not a str or bytes"),
        (Decimal("NaN"), "Decimal NaN is not finite"),
    ],
)
async def test_values_outside_the_model_are_refused_by_type(value: Any, named: str) -> None:
    async with testing.cluster(1) as c:
        q = c.node(1).queue("q")
        with pytest.raises(UnsupportedValue, match="give the cell a serializer=") as info:
            await q.push(value)
        assert named in str(info.value)
        await q.push("still fine")
        assert await q.pop() == "still fine"


ORDERS = serializer(lambda o: json.dumps(dataclasses.asdict(o)),
                    lambda s: Order(**json.loads(s)))


async def test_a_serializer_carries_other_objects_on_every_backend() -> None:
    orders = [Order(1, ["a"]), Order(2, [])]
    local: QueueCell[Order] = QueueCell(serializer=ORDERS)
    topic: TopicCell[Order] = TopicCell(serializer=ORDERS)
    jobs = WorkQueueCell(serializer=ORDERS, clock=lambda: 0.0)
    await topic.subscribe("s")
    for order in orders:
        await local.push(order)
        await topic.publish(order)
        await jobs.push(order)
    assert local.head() == orders[0]
    assert [await local.pop(), await local.pop()] == orders
    assert topic.reader("s")() == orders and await topic.advance("s") == orders[0]
    assert [p.value for p in jobs.pending()] == orders
    assert (await jobs.claim("w")).value == orders[0]
    assert jobs.in_flight()[0].value == orders[0]
    assert topic.snapshot()["elements"] == [json.dumps(dataclasses.asdict(o)) for o in orders]
    async with testing.cluster(3) as c:
        producer, consumer = await c.followers()
        await producer.queue("orders", serializer=ORDERS).push_many(orders)
        await c.settle()
        far = consumer.queue("orders", serializer=ORDERS)
        assert far.head() == orders[0]
        assert [x async for x in _take(far, 2)] == orders
        remote = producer.work_queue("jobs", serializer=ORDERS)
        await remote.push(orders[1])
        async for job in remote.deliveries("w"):
            async with job:
                assert job.value == orders[1]
            break


async def _take(queue: QueueCell[Any], n: int) -> Any:
    for _ in range(n):
        yield await queue.pop()


async def test_serializer_failures_and_sizes_are_typed() -> None:
    broken = serializer(lambda v: v.missing, lambda d: d)
    q: QueueCell[Any] = QueueCell(serializer=broken, name="q")
    with pytest.raises(UnsupportedValue, match=r"q: serializer\(.*\) could not encode a "
                       r"builtins.int: AttributeError"):
        await q.push(1)
    unreadable = QueueCell(serializer=serializer(str, lambda d: int("x" + d)), name="u")
    await unreadable.push(5)
    with pytest.raises(UnsupportedValue, match=r"could not decode a stored builtins\.str"):
        await unreadable.pop()
    async with testing.cluster(1, max_message_bytes=1024) as c:
        blobs = c.node(1).queue("b", serializer=serializer(lambda n: b"x" * n, len))
        await blobs.push(1024)
        with pytest.raises(MessageTooLarge) as info:
            await blobs.push(1025)  # the limit counts the serializer's bytes
        assert (info.value.size, info.value.limit) == (1025, 1024)
        assert await blobs.pop() == 1024
        with pytest.raises(Exception, match="already open with serializer"):
            c.node(1).queue("b")


def _lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


async def test_the_nesting_refusal_names_the_depth_a_push_and_a_transaction_accept() -> None:
    limits = r"nested at most 45 levels \(44 in a transaction\)"
    async with testing.cluster(1) as c:
        node = await c.leader()
        q = node.queue("deep")
        await q.push(_lists(45))
        with pytest.raises(UnsupportedValue, match=limits):
            await q.push(_lists(46))
        async with node.transaction() as tx:
            tx.push(q, _lists(44))
        with pytest.raises(UnsupportedValue, match=limits):
            async with node.transaction() as tx:
                tx.push(q, _lists(45))
        assert q.len() == 2
