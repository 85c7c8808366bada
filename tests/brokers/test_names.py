"""Names and counts on the broker backends: every name the rule of names allows works
(on NATS too, whose stream and consumer names hold 255 characters), longer ones are
refused at the call, and a count past a broker's integers takes what there is."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import connect
from lazily_queue.errors import InvalidName
from lazily_queue.names import MAX_NAME_LENGTH

from .conftest import fresh


def _longest(prefix: str, fill: str = "é") -> str:
    """A name of exactly MAX_NAME_LENGTH characters starting with a fresh ``prefix``."""
    head = fresh(prefix)
    return head + fill * (MAX_NAME_LENGTH - len(head))


async def test_the_longest_names_work_on_every_kind(broker_url: str) -> None:
    async with connect(broker_url) as client:
        queue = client.queue(_longest("q"))
        await queue.push(1)
        assert await asyncio.wait_for(queue.pop(), 10) == 1

        jobs = client.work_queue(_longest("w"))
        await jobs.push(2)
        worker = _longest("worker")
        delivery = await asyncio.wait_for(jobs.claim(worker), 10)
        assert delivery.value == 2
        receipt = await jobs.ack(worker, delivery.delivery_id)
        assert (receipt.worker, receipt.outcome) == (worker, "acked")

        topic = client.topic(_longest("t"))
        subscriber = _longest("s")
        await topic.subscribe(subscriber)
        await topic.publish(3)
        assert await asyncio.wait_for(topic.advance(subscriber), 10) == 3


async def test_names_over_the_rule_are_refused_at_the_call(broker_url: str) -> None:
    over = "n" * (MAX_NAME_LENGTH + 1)
    async with connect(broker_url) as client:
        for open_ in (client.queue, client.work_queue, client.topic):
            with pytest.raises(InvalidName, match="over the limit of 1024"):
                open_(over)
        topic = client.topic(fresh("t"))
        with pytest.raises(InvalidName, match="subscriber name"):
            await topic.subscribe("s" * 100_000)
        jobs = client.work_queue(fresh("w"))
        await jobs.push(1)
        with pytest.raises(InvalidName, match="worker name"):
            await jobs.claim("w" * (MAX_NAME_LENGTH + 1))
        # Nothing reached the broker: the connection still serves.
        queue = client.queue(fresh("after"))
        await queue.push("still here")
        assert await asyncio.wait_for(queue.pop(), 10) == "still here"


async def test_a_count_past_the_brokers_integers_takes_what_there_is(broker_url: str) -> None:
    huge = 10**400
    async with connect(broker_url) as client:
        queue = client.queue(fresh("q"))
        await queue.push_many([1, 2, 3])
        assert await asyncio.wait_for(queue.pop_many(huge), 10) == [1, 2, 3]
        jobs = client.work_queue(fresh("w"))
        await jobs.push_many([4, 5])
        claimed = await asyncio.wait_for(jobs.claim_many("w", huge), 10)
        assert sorted(delivery.value for delivery in claimed) == [4, 5]


async def test_a_subscriber_whose_nats_description_would_not_fit_is_refused(
    nats_server: Any,
) -> None:
    url = nats_server.url
    async with connect(url) as client:
        topic = client.topic(fresh("t"))
        with pytest.raises(InvalidName, match="over the server's limit of 4096"):
            await topic.subscribe("\U0001f600" * MAX_NAME_LENGTH)  # 4 bytes each
        await topic.subscribe("s")
        await topic.publish(1)
        assert await asyncio.wait_for(topic.advance("s"), 10) == 1


def test_nats_names_keep_their_form_while_it_fits() -> None:
    pytest.importorskip("nats")
    from lazily_queue.brokers.nats_names import NAME_LIMIT, token

    assert token("orders") == "orders"
    assert token("é") == "xc3a9"
    fits = "é" * 62  # 124 bytes: "LQ_Q_x" and 248 hex digits make 254 characters
    assert token(fits, len("LQ_Q_")) == "x" + fits.encode().hex()
    longer = "é" * 63
    hashed = token(longer, len("LQ_Q_"))
    assert hashed.startswith("h") and len(hashed) == 65
    assert hashed != token(longer + "é", len("LQ_Q_"))
    assert len("LQ_DL_" + token("é" * MAX_NAME_LENGTH, len("LQ_DL_"))) <= NAME_LIMIT


async def test_a_declaration_that_fails_after_its_caller_left_logs_nothing() -> None:
    """A client closed while a declaration runs: its failure, awaited by nobody, is not
    reported as an exception never retrieved."""
    import gc

    from lazily_queue.brokers.mirror import Declared

    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    started = asyncio.Event()

    async def declare() -> None:
        started.set()
        await asyncio.sleep(0.01)
        raise ConnectionError("the connection is draining")

    declared = Declared(declare)
    caller = asyncio.ensure_future(declared.ensure())
    await started.wait()
    caller.cancel()
    await asyncio.sleep(0.05)
    del declared, caller
    gc.collect()
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert not [c for c in reported if "never retrieved" in str(c.get("message"))]


async def test_two_names_of_one_nats_stream_are_told_apart(nats_server: Any) -> None:
    """``" "`` is hex-encoded to ``x20``, which is also the plain name ``x20``: a stream
    (and a topic's consumer) keeps the name it was made for, and the other is refused."""
    from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType

    from lazily_queue.brokers import IncompatibleBrokerObject

    async with connect(nats_server.url) as client:
        first = client.queue(" ")
        await first.push("one")
        with pytest.raises(IncompatibleBrokerObject, match="maps to the same stream name"):
            await client.queue("x20").push("two")
        assert await asyncio.wait_for(first.pop(), 10) == "one"
        topic = client.topic(fresh("t"))
        await topic.subscribe(" ")
        with pytest.raises(IncompatibleBrokerObject, match="same consumer name"):
            await topic.subscribe("x20")
        await topic.publish(1)
        assert await asyncio.wait_for(topic.advance(" "), 10) == 1
        # A stream made without a description (by an earlier version) is taken as it is.
        await client.provider.js.add_stream(  # type: ignore[attr-defined]
            name="LQ_Q_x21", subjects=["lq.q.x21"], retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE, max_msgs=-1, discard=DiscardPolicy.NEW,
            allow_direct=True)
        earlier = client.queue("!")
        await earlier.push("kept")
        assert await asyncio.wait_for(earlier.pop(), 10) == "kept"


async def test_a_worker_or_subscriber_name_the_broker_refuses_raises_on_an_empty_queue(
        broker_url: str) -> None:
    """Refused at once, not once an item is pending: an empty name names no consumer."""

    async def first(jobs: Any, worker: str) -> Any:
        async for job in jobs.deliveries(worker):
            return job
        return None

    async with connect(broker_url) as client:
        jobs = client.work_queue(fresh("w"))
        for worker in ("", "w" * (MAX_NAME_LENGTH + 1)):
            for claiming in (jobs.claim(worker), jobs.claim_many(worker, 2),
                             first(jobs, worker)):
                with pytest.raises(InvalidName, match="worker"):
                    await asyncio.wait_for(claiming, 5)
        with pytest.raises(InvalidName, match="subscriber name must be a non-empty"):
            await client.topic(fresh("t")).subscribe("")
        if broker_url.startswith("redis"):  # the library's own consumers are lq.*
            with pytest.raises(InvalidName, match=r"'lq\.'"):
                await asyncio.wait_for(jobs.claim("lq.worker"), 5)
