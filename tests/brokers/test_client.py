"""``lazily_queue.connect``: the same cells, over a broker, with one changed line."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from lazily_queue import Client, QueueCell, TopicCell, WorkQueueCell, connect
from lazily_queue.errors import InvalidConfiguration

from .conftest import fresh


async def test_connect_hands_out_the_cells_of_the_embedded_api(broker_url: str) -> None:
    async with connect(broker_url) as client:
        assert isinstance(client, Client)
        q = client.queue(fresh("q"))
        assert isinstance(q, QueueCell) and client.queue(q.name) is q
        assert isinstance(client.work_queue(fresh("w")), WorkQueueCell)
        assert isinstance(client.topic(fresh("t")), TopicCell)
        with pytest.raises(InvalidConfiguration):
            client.queue(q.name, capacity=3)
        await q.push({"hello": "broker"})
        assert await q.pop(timeout=10) == {"hello": "broker"}


async def test_await_connect_and_close(broker_url: str) -> None:
    client = await connect(broker_url)
    try:
        jobs = client.work_queue(fresh("jobs"), visibility_timeout=30)
        await jobs.push(1)
        async for job in jobs.deliveries("w", prefetch=1):
            async with job:
                assert job.value == 1
            break
    finally:
        await client.close()
    with pytest.raises(RuntimeError, match="closed"):
        client.queue("after")


def _looked(storage: Any, name: str) -> asyncio.Event:
    """Set once ``storage.<name>`` (a pop's poll, a claim's emptiness check) has
    returned: a call that found nothing then waits, in the same step."""
    looked = asyncio.Event()
    method = getattr(storage, name)

    def sync(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        looked.set()
        return result

    async def coroutine(*args: Any, **kwargs: Any) -> Any:
        result = await method(*args, **kwargs)
        looked.set()
        return result

    setattr(storage, name, coroutine if inspect.iscoroutinefunction(method) else sync)
    return looked


async def test_closing_the_client_wakes_waiting_calls(broker_url: str) -> None:
    """A pop or claim waiting on a closed client fails with BrokerClosed (no hang)."""
    from lazily_queue.brokers import BrokerClosed

    client = await connect(broker_url)
    q = client.queue(fresh("waiting"))
    jobs = client.work_queue(fresh("waiting-jobs"))
    await q.storage.sync()  # type: ignore[attr-defined]
    await jobs.storage.sync()  # type: ignore[attr-defined]
    looked = [_looked(q.storage, "poll"), _looked(jobs.storage, "is_empty")]
    popping = asyncio.ensure_future(q.pop())
    claiming = asyncio.ensure_future(jobs.claim("w"))
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in looked)), 10)
    assert not popping.done() and not claiming.done()  # found nothing: they wait
    await client.close()
    for waiting in (popping, claiming):
        with pytest.raises(BrokerClosed):
            await asyncio.wait_for(waiting, 10)


async def test_the_nodes_cell_arguments_are_taken_or_refused_by_name(broker_url: str) -> None:
    """What opens a node's cells opens a broker's: a serializer works as on a node, and
    the options a broker cannot honour raise UnsupportedOperation naming the backend
    (not a TypeError about an unexpected argument)."""
    from lazily_queue import RetryPolicy, UnsupportedOperation, serializer

    upper = serializer(lambda s: s.upper(), lambda s: s.lower())
    async with connect(broker_url) as client:
        backend = type(client.provider).__name__
        q = client.queue(fresh("q"), serializer=upper)
        assert client.queue(q.name, serializer=upper) is q
        with pytest.raises(InvalidConfiguration, match="serializer"):
            client.queue(q.name)
        await q.push("hello")
        assert await q.pop(timeout=10) == "hello"
        jobs = client.work_queue(fresh("w"), serializer=upper)
        await jobs.push("job")
        assert (await jobs.claim("w", timeout=10)).value == "job"
        topic = client.topic(fresh("t"), serializer=upper)
        await topic.subscribe("s")
        await topic.publish("news")
        assert await topic.advance("s", timeout=10) == "news"
        for opening in (lambda: client.queue(fresh("q"), ttl=60),
                        lambda: client.work_queue(fresh("w"), ttl=60),
                        lambda: client.work_queue(fresh("w"), retry=RetryPolicy.fixed(1)),
                        lambda: client.topic(fresh("t"), ttl=60),
                        lambda: client.topic(fresh("t"), max_age=60)):
            with pytest.raises(UnsupportedOperation, match=backend):
                opening()


async def test_a_transaction_is_refused_naming_the_backend(broker_url: str) -> None:
    from lazily_queue import TransactionUnsupported

    async with connect(broker_url) as client:
        with pytest.raises(TransactionUnsupported, match=type(client.provider).__name__):
            client.transaction()
