"""Two processes declaring the same objects at the same moment both succeed and then
share them (JetStream answers the slower of two concurrent stream adds with "name in
use" or "subjects overlap"; Redis declares each object in one script)."""

from __future__ import annotations

import asyncio
from typing import Any

from lazily_queue import QueueCell, TopicCell, WorkQueueCell
from lazily_queue.client.brokers import open_provider

from .conftest import fresh

#: Rounds, and objects of each kind declared together per round. On NATS the race is
#: one of timing inside the server, so it is given many chances (without reading back
#: the stream, about two runs in three failed); Redis declares in one script.
ROUNDS = {"nats": 30, "redis": 5}
PER_ROUND = 3


def _pair(first: Any, second: Any, kind: str) -> tuple[Any, Any]:
    name = fresh(f"race-{kind}")
    if kind == "work":
        return (first.work_queue(name, visibility_timeout=30, max_deliveries=3),
                second.work_queue(name, visibility_timeout=30, max_deliveries=3))
    return getattr(first, kind)(name), getattr(second, kind)(name)


async def _shared(kind: str, one: Any, other: Any) -> None:
    """What one side writes, the other reads: both declared the same object."""
    if kind == "queue":
        await QueueCell(one).push("item")
        assert await QueueCell(other).pop(timeout=10) == "item"
    elif kind == "work":
        await WorkQueueCell(one).push("job")
        claimed = WorkQueueCell(other)
        job = await claimed.claim("worker", timeout=10)
        assert job.value == "job"
        await claimed.ack("worker", job.delivery_id)
    else:
        await TopicCell(one).publish("news")
        await other.sync()
        assert TopicCell(other).end_offset() == 1


async def test_two_connections_declare_the_same_objects_at_once(broker_url: str) -> None:
    first = await open_provider(broker_url, poll_interval=0.2)
    second = await open_provider(broker_url, poll_interval=0.2)
    try:
        for _ in range(ROUNDS[broker_url.partition(":")[0]]):
            pairs = [(kind, *_pair(first, second, kind))
                     for kind in ("queue", "work", "topic") for _ in range(PER_ROUND)]
            storages = [s for _, one, other in pairs for s in (one, other)]
            outcomes = await asyncio.gather(*(s.declare() for s in storages),
                                            return_exceptions=True)
            failed = [(s, o) for s, o in zip(storages, outcomes, strict=True) if o is not None]
            assert not failed, failed
            for kind, one, other in pairs:
                await _shared(kind, one, other)
            # each open storage polls its object every poll_interval: the rounds' objects
            # left open would make every later round wait behind hundreds of refreshes
            for storage in storages:
                await storage.aclose()
    finally:
        await first.close()
        await second.close()
