"""An operator's change to a JetStream consumer while a process uses it (``nats consumer
edit``, made here with the same update request; or ``rm`` and ``add``): what a work
queue declares of its consumer (``ack_wait`` = the visibility timeout, ``max_deliver``,
its policies) is refused with a typed error naming the consumer and the fix, by the
next refresh and operation, until it is set back; what this library never gives a
consumer (a ``max_ack_pending`` limit, headers only; a topic subscriber's back-off and
``max_deliver``) is put back."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from lazily_queue import QueueCell, TopicCell, WorkQueueCell, connect
from lazily_queue.brokers import IncompatibleBrokerObject
from lazily_queue.brokers.nats_work import CONSUMER
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider

from .conftest import fresh
from .held_refreshes import hold_refreshes
from .link_cutter import LinkCutter, wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def provider(nats_server: BrokerServer) -> AsyncIterator[Any]:
    backend = await open_provider(nats_server.url, poll_interval=0.2, timeout=2)
    try:
        yield backend
    finally:
        await backend.close()


@pytest.fixture
async def js(nats_server: BrokerServer) -> AsyncIterator[Any]:
    """The operator's connection."""
    nc = await nats.connect(nats_server.url)
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


async def edit(js: Any, stream: str, consumer: str, **changes: Any) -> None:
    """``nats consumer edit``: the consumer's settings as the server has them, changed."""
    config = (await js.consumer_info(stream, consumer)).config
    await js.add_consumer(stream, dataclasses.replace(config, **changes))


def work_queue(provider: Any) -> WorkQueueCell[Any]:
    return WorkQueueCell(provider.work_queue(fresh("edited"), visibility_timeout=30,
                                             max_deliveries=3))


@pytest.mark.parametrize(("changes", "told"), [
    ({"ack_wait": 5.0}, "has ack_wait 5.0; this work queue needs ack_wait 30.0"),
    ({"max_deliver": 10}, "has max_deliver 10; this work queue needs max_deliver 4"),
    ({"backoff": [20.0, 25.0]},
     r"has ack_wait 20.0, backoff \[20.0, 25.0\]; this work queue needs ack_wait 30.0, "
     "backoff None"),
])
async def test_a_work_queue_consumer_edited_while_in_use_is_refused_until_set_back(
    provider: Any, js: Any, changes: dict[str, Any], told: str,
) -> None:
    """Before, the process went on: leases of 5 s where it promised 30, dead letters
    after another number of deliveries."""
    jobs = work_queue(provider)
    await jobs.push("kept")
    stream = jobs.storage.stream  # type: ignore[attr-defined]
    await jobs.storage.sync()  # type: ignore[attr-defined]
    await edit(js, stream, CONSUMER, **changes)
    message = rf"consumer lq of {stream} {told}: .*`nats consumer edit {stream} lq`"
    with pytest.raises(IncompatibleBrokerObject, match=message):
        await jobs.storage.sync()  # type: ignore[attr-defined]
    for call in (lambda: jobs.claim("w", timeout=5), lambda: jobs.push("refused")):
        with pytest.raises(IncompatibleBrokerObject, match=message):
            await call()
    await edit(js, stream, CONSUMER, ack_wait=30.0, max_deliver=4, backoff=None)
    delivery = await jobs.claim("w", timeout=5)
    assert delivery.value == "kept"
    await jobs.ack("w", delivery.delivery_id)


async def test_a_waiting_claim_is_told_of_a_consumer_edited_meanwhile(
    provider: Any, js: Any,
) -> None:
    jobs = work_queue(provider)
    await jobs.push("first")
    (await jobs.claim("w", timeout=5))  # declared, and empty now
    waiting = asyncio.ensure_future(jobs.claim("w", timeout=20))
    await asyncio.sleep(0.3)
    await edit(js, jobs.storage.stream, CONSUMER, ack_wait=5.0)  # type: ignore[attr-defined]
    with pytest.raises(IncompatibleBrokerObject, match=r"ack_wait 5\.0"):
        await waiting


async def test_a_work_queue_consumer_added_again_with_other_settings_is_refused(
    provider: Any, js: Any,
) -> None:
    """``nats consumer rm`` and ``add`` between two refreshes, with another wait."""
    jobs = work_queue(provider)
    await jobs.push("kept")
    stream = jobs.storage.stream  # type: ignore[attr-defined]
    await jobs.storage.sync()  # type: ignore[attr-defined]
    await js.delete_consumer(stream, CONSUMER)
    await js.add_consumer(stream, ConsumerConfig(
        durable_name=CONSUMER, ack_policy=AckPolicy.EXPLICIT, ack_wait=5, max_deliver=4))
    message = rf"has ack_wait 5.0; .*`nats consumer rm {stream} lq`"
    with pytest.raises(IncompatibleBrokerObject, match=message):
        await jobs.storage.sync()  # type: ignore[attr-defined]
    with pytest.raises(IncompatibleBrokerObject, match=message):
        await jobs.claim("w", timeout=5)
    await js.delete_consumer(stream, CONSUMER)  # the fix: it is declared again
    assert (await jobs.claim("w", timeout=5)).value == "kept"


PUT_BACK_CHANGES: list[dict[str, Any]] = [{"max_ack_pending": 1}, {"headers_only": True}]


@pytest.mark.parametrize("changes", PUT_BACK_CHANGES, ids=lambda c: next(iter(c)))
async def test_what_a_work_queue_never_sets_is_put_back(
    provider: Any, js: Any, changes: dict[str, Any],
) -> None:
    """Before, claims went on under the change: values not delivered (headers only),
    nothing delivered (another filter), redeliveries at other times (back-off)."""
    jobs = work_queue(provider)
    await jobs.push("first")
    stream = jobs.storage.stream  # type: ignore[attr-defined]
    await jobs.storage.sync()  # type: ignore[attr-defined]
    await edit(js, stream, CONSUMER, **changes)
    await jobs.storage.sync()  # type: ignore[attr-defined]
    config = (await js.consumer_info(stream, CONSUMER)).config
    assert (config.max_ack_pending, config.headers_only) == (-1, None)
    assert (await jobs.claim("w", timeout=5)).value == "first"


@pytest.mark.parametrize("changes", [*PUT_BACK_CHANGES, {"max_deliver": 1}],
                         ids=lambda c: next(iter(c)))
async def test_what_a_queue_never_sets_is_put_back_by_a_refresh(
    provider: Any, js: Any, changes: dict[str, Any],
) -> None:
    """As a work queue's: before, a queue's consumer was checked only where the queue
    was opened, so its pops went on under the change (headers only: each element popped
    as an empty ``Undecodable``, lost)."""
    queue: QueueCell[Any] = QueueCell(provider.queue(fresh("edited-queue")))
    await queue.push("first")
    storage: Any = queue.storage
    await storage.sync()
    await edit(js, storage.stream, CONSUMER, **changes)
    await storage.sync()
    config = (await js.consumer_info(storage.stream, CONSUMER)).config
    assert (config.max_ack_pending, config.headers_only, config.max_deliver) == (-1, None, -1)
    assert await queue.pop(timeout=5) == "first"


async def test_a_pop_and_a_claim_before_the_refresh_get_the_whole_values(
    provider: Any, js: Any,
) -> None:
    """Under ``headers_only`` the server delivers no payload: a pop or claim made before
    any refresh puts the setting back reads the values from the stream (before, the pop
    acked the element and returned an empty ``Undecodable``, and the claim leased one)."""
    queue: QueueCell[Any] = QueueCell(provider.queue(fresh("cut-queue")))
    jobs = work_queue(provider)
    for cell in (queue, jobs):
        await cell.push("whole")
        storage: Any = cell.storage
        await storage.sync()
        go_on = hold_refreshes(storage)
        await edit(js, storage.stream, CONSUMER, headers_only=True)
        if cell is queue:
            assert await queue.pop(timeout=5) == "whole"
        else:
            assert (await jobs.claim("w", timeout=5)).value == "whole"
        go_on.set()
        await storage.sync()
        assert (await js.consumer_info(storage.stream, CONSUMER)).config.headers_only is None


@pytest.mark.parametrize("changes", [
    *PUT_BACK_CHANGES, {"max_deliver": 1}, {"max_deliver": 3, "backoff": [20.0, 25.0]},
], ids=lambda c: "+".join(c))
async def test_what_a_topic_subscriber_never_sets_is_put_back(
    provider: Any, js: Any, changes: dict[str, Any],
) -> None:
    """Before, the advance pulled under the change: values not delivered, a message
    delivered again (``-NAK``) never delivered past ``max_deliver``, or only after the
    back-off."""
    topic: TopicCell[Any] = TopicCell(provider.topic(fresh("edited-topic")))
    await topic.subscribe("d")
    await topic.publish(0)
    storage: Any = topic.storage
    name = storage._consumer_name("d")
    await storage.sync()
    await edit(js, storage.stream, name, **changes)
    if "max_deliver" in changes:  # a pull whose reply was lost: 0 delivered
        assert len(await storage._backend.pull(storage.stream, name, 1)) == 1
    await storage.sync()
    await topic.publish(1)
    assert [await topic.advance("d", timeout=5) for _ in range(2)] == [0, 1]
    config = (await js.consumer_info(storage.stream, name)).config
    assert (config.max_ack_pending, config.headers_only, config.backoff,
            config.max_deliver) == (-1, None, None, -1)


async def test_a_topic_subscribers_ack_wait_changes_nothing(provider: Any, js: Any) -> None:
    """It acknowledges what it pulls at once and has what it did not delivered again by
    ``-NAK``: the wait is left as the operator set it."""
    topic: TopicCell[Any] = TopicCell(provider.topic(fresh("edited-wait")))
    await topic.subscribe("d")
    await topic.publish(0)
    storage: Any = topic.storage
    name = storage._consumer_name("d")
    await edit(js, storage.stream, name, ack_wait=3600.0)
    assert len(await storage._backend.pull(storage.stream, name, 1)) == 1  # reply lost
    await topic.publish(1)
    assert [await topic.advance("d", timeout=5) for _ in range(2)] == [0, 1]
    assert (await js.consumer_info(storage.stream, name)).config.ack_wait == 3600.0


async def test_a_consumer_edited_while_the_process_was_disconnected_is_refused_once_back(
    nats_server: BrokerServer, js: Any,
) -> None:
    async with LinkCutter(nats_server.port) as link, \
            connect(link.url, poll_interval=0.2, timeout=3) as client:
        jobs = client.work_queue(fresh("edited-cut"), visibility_timeout=30,
                                 max_deliveries=3)
        await jobs.push("kept")
        nc = jobs.storage._backend.nc  # type: ignore[attr-defined]
        link.cut()
        await wait_for(lambda: not nc.is_connected, "the client to notice the cut")
        stream = jobs.storage.stream  # type: ignore[attr-defined]
        await edit(js, stream, CONSUMER, max_deliver=10)
        link.mend()
        await wait_for(lambda: nc.is_connected, "the client to reconnect")
        with pytest.raises(IncompatibleBrokerObject, match=r"has max_deliver 10; "):
            await jobs.claim("w", timeout=5)


async def test_an_empty_queues_refreshes_check_its_consumer_at_most_every_poll_interval(
    nats_server: BrokerServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A queue's refreshes read its consumer's settings on ``sync()`` and otherwise at
    most every ``poll_interval``, an empty queue's too (whose refreshes read no
    elements)."""
    from lazily_queue.brokers import nats_queue

    checks = 0
    real = nats_queue.refreshed

    async def counted(*args: Any) -> Any:
        nonlocal checks
        checks += 1
        return await real(*args)

    monkeypatch.setattr(nats_queue, "refreshed", counted)
    backend = await open_provider(nats_server.url, poll_interval=60, timeout=2)
    try:
        queue: QueueCell[Any] = QueueCell(backend.queue(fresh("empty-queue")))
        storage: Any = queue.storage
        await storage.sync()
        after_sync = checks
        for _ in range(4):
            await storage._read()
        assert checks == after_sync
        await storage.sync()
        assert checks == after_sync + 1
    finally:
        await backend.close()
