"""Limits over a broker: a length bound with reject maps to the broker's own bound
(capacity); byte bounds and drop_oldest are refused with a typed error naming the
broker."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import Limits, QueuePushError, UnsupportedOperation, serializer
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
    assert q.limits() == Limits(max_length=1)  # what it was opened with, as on a node
    assert q.quota is None  # the broker counts no bytes of ours (README)
    assert client.queue(fresh("limits"), capacity=1).limits() is None
    serialized = client.queue(fresh("limits"), limits=Limits(max_length=2),
                              serializer=serializer(str.upper, str.lower))
    assert serialized.limits() == Limits(max_length=2)
    await q.push("a")
    assert await q.offer("b") is QueuePushError.Full


async def test_work_queue_and_topic_limits_are_refused_naming_the_broker(provider: Any) -> None:
    client = Client(provider)
    with pytest.raises(UnsupportedOperation, match=type(provider).__name__):
        client.work_queue(fresh("limits"), limits=Limits(max_length=3))
    with pytest.raises(UnsupportedOperation, match=type(provider).__name__):
        client.topic(fresh("limits"), limits=Limits(max_length=3, overflow="drop_oldest"))


async def test_a_message_over_nats_max_payload_is_too_large_and_stores_nothing(
    nats_server: Any,
) -> None:
    import asyncio

    from lazily_queue import MessageTooLarge, connect

    async with connect(nats_server.url) as client:
        big = b"x" * (1 << 20)  # the server's default max_payload is 1 MiB
        queue, jobs, topic = (client.queue(fresh("q")), client.work_queue(fresh("w")),
                              client.topic(fresh("t")))
        await topic.subscribe("s")
        for push in (queue.push, jobs.push, topic.publish):
            with pytest.raises(MessageTooLarge, match="max_payload of 1048576") as caught:
                await push(big)
            assert caught.value.limit == 1 << 20
        await queue.push("small")
        assert await asyncio.wait_for(queue.pop(), 10) == "small"
        await queue.storage.sync()  # type: ignore[attr-defined]
        assert queue.len() == 0 and jobs.pending_len() == 0


@pytest.mark.parametrize(("option", "value"), [
    ("poll_interval", 10**400), ("poll_interval", 0), ("poll_interval", float("nan")),
    ("timeout", -1), ("view_limit", "10"), ("view_limit", -1), ("view_limit", 10**400),
])
async def test_wrong_connect_options_are_refused_before_connecting(
    broker_url: str, option: str, value: Any,
) -> None:
    from lazily_queue import InvalidConfiguration, connect

    with pytest.raises(InvalidConfiguration, match=option):
        await connect(broker_url, **{option: value})


@pytest.mark.parametrize(("kind", "key", "most", "setting"), [
    ("queue", "capacity", 2**63 - 1, "max_msgs"),
    ("work_queue", "visibility_timeout", (2**63 - 1) // 10**9, "ack_wait"),
    ("work_queue", "max_deliveries", 2**63 - 2, "max_deliver"),
])
async def test_settings_past_what_jetstream_holds_are_refused_at_the_call(
    nats_server: Any, kind: str, key: str, most: int, setting: str,
) -> None:
    """One past the bound is refused at the call; the bound itself is one the server
    takes (the object is declared, and pushed to and consumed from)."""
    import asyncio

    from lazily_queue import InvalidConfiguration, connect

    async with connect(nats_server.url) as client:
        with pytest.raises(InvalidConfiguration, match=setting):
            getattr(client, kind)(fresh(kind), **{key: most + 1})
        cell = getattr(client, kind)(fresh(kind), **{key: most})
        await cell.push("at the bound")
        taken = await asyncio.wait_for(cell.pop() if kind == "queue" else cell.claim("w"), 10)
        assert taken == "at the bound" or taken.value == "at the bound"
