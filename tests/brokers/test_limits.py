"""Limits over a broker: a length bound with reject maps to the broker's own bound
(capacity); byte bounds and drop_oldest are refused with a typed error naming the
broker."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import Limits, QueuePushError, UnsupportedOperation
from lazily_queue.client.brokers import Client

from .conftest import fresh


@pytest.mark.parametrize("limits", [Limits(max_bytes=10), Limits(max_length=3,
                                                                 overflow="drop_oldest")])
async def test_limits_a_broker_cannot_keep_are_refused_naming_it(provider: Any,
                                                                 limits: Limits) -> None:
    client = Client(provider)
    with pytest.raises(UnsupportedOperation, match=type(provider).__name__):
        client.queue(fresh("limits"), limits=limits)


async def test_a_length_limit_with_reject_is_the_broker_capacity(provider: Any) -> None:
    client = Client(provider)
    q = client.queue(fresh("limits"), limits=Limits(max_length=1))
    assert q.capacity() == 1
    await q.push("a")
    assert await q.offer("b") is QueuePushError.Full


async def test_work_queue_and_topic_limits_are_refused_naming_the_broker(provider: Any) -> None:
    client = Client(provider)
    with pytest.raises(UnsupportedOperation, match=type(provider).__name__):
        client.work_queue(fresh("limits"), limits=Limits(max_length=3))
    with pytest.raises(UnsupportedOperation, match=type(provider).__name__):
        client.topic(fresh("limits"), limits=Limits(max_length=3, overflow="drop_oldest"))
