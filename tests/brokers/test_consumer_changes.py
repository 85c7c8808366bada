"""A topic subscriber's JetStream consumer is changed in place (connect, disconnect, the
clamp of gc), never deleted and created again: a process killed between two calls, or
two processes changing it at once, leave the subscriber and its cursor whole (no
element skipped or read twice); a consumer deleted outside this library is named in a
typed error (topics) or declared again (queues and work queues, which lose nothing)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import nats
import nats.errors
import pytest

from lazily_queue import (
    QueueCell,
    SubscribeOutcome,
    TopicCell,
    UnknownSubscriber,
    WorkQueueCell,
    connect,
)
from lazily_queue.brokers import SubscriberConsumerLost
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider

from .conftest import fresh

#: A process that runs one topic operation and SIGKILLs itself as soon as a call that
#: changes a consumer (delete or create/update) has returned.
KILLED_MIDWAY = """
import asyncio, os, signal, sys
from nats.js import JetStreamContext
from lazily_queue import TopicCell
from lazily_queue.client.brokers import open_provider

def dying(call):
    async def then_die(self, *args, **kwargs):
        await call(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
    return then_die

JetStreamContext.delete_consumer = dying(JetStreamContext.delete_consumer)
JetStreamContext.add_consumer = dying(JetStreamContext.add_consumer)

async def main(url, name, op):
    provider = await open_provider(url, poll_interval=0.2)
    topic = TopicCell(provider.topic(name))
    print(await (topic.reconnect("d") if op == "reconnect" else topic.gc()))
    await provider.close()

asyncio.run(main(*sys.argv[1:]))
"""


def run_killed_midway(url: str, name: str, op: str) -> None:
    subprocess.run([sys.executable, "-c", KILLED_MIDWAY, url, name, op], check=False,
                   capture_output=True, timeout=60)


async def left_behind(url: str, name: str) -> None:
    """Publish 0..4 to topic ``name``; durable ``d`` reads 0 and has 1, 2 delivered but
    never acknowledged (a pull whose process died), then disconnects."""
    provider = await open_provider(url, poll_interval=0.2)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.subscribe("d")
        for n in range(5):
            await topic.publish(n)
        assert await topic.advance("d", timeout=10) == 0
        storage = topic.storage
        pulled = await storage._backend.pull(  # type: ignore[attr-defined]
            storage.stream, storage._consumer_name("d"), 2)  # type: ignore[attr-defined]
        assert len(pulled) == 2
        assert await topic.disconnect("d")
    finally:
        await provider.close()


async def read_all(topic: TopicCell[Any], subscriber: str, count: int) -> list[Any]:
    return [await topic.advance(subscriber, timeout=10) for _ in range(count)]


async def test_a_reconnect_killed_midway_keeps_the_durable_subscriber(
    nats_server: BrokerServer,
) -> None:
    name = fresh("killed-reconnect")
    await left_behind(nats_server.url, name)
    run_killed_midway(nats_server.url, name, "reconnect")
    provider = await open_provider(nats_server.url, poll_interval=0.2)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.reconnect("d")
        assert await read_all(topic, "d", 4) == [1, 2, 3, 4]
    finally:
        await provider.close()


async def gc_ready(url: str, name: str) -> None:
    """Topic ``name`` with 0..4, durable ``d`` past 0..2 and ephemeral ``e`` at 0."""
    provider = await open_provider(url, poll_interval=0.2)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.subscribe("d")
        await topic.subscribe("e", "ephemeral")
        for n in range(5):
            await topic.publish(n)
        assert await read_all(topic, "d", 3) == [0, 1, 2]
    finally:
        await provider.close()


async def test_a_gc_killed_midway_keeps_the_lagging_ephemeral_subscriber(
    nats_server: BrokerServer,
) -> None:
    name = fresh("killed-gc")
    await gc_ready(nats_server.url, name)
    run_killed_midway(nats_server.url, name, "gc")
    provider = await open_provider(nats_server.url, poll_interval=0.2)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(name))
        await topic.storage.sync()  # type: ignore[attr-defined]
        assert topic.storage.cursor("e") == 3
        assert await read_all(topic, "e", 2) == [3, 4]
    finally:
        await provider.close()


async def test_gc_leaves_no_gap_behind_a_lost_pull(nats_server: BrokerServer) -> None:
    """A purge drops what each consumer delivered and did not acknowledge: ``gc`` waits
    for none to be past the new base, so a pull whose reply was lost skips nothing."""
    provider = await open_provider(nats_server.url, poll_interval=0.2)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(fresh("gc-lost-pull")))
        await topic.subscribe("d")
        for n in range(6):
            await topic.publish(n)
        assert await read_all(topic, "d", 3) == [0, 1, 2]
        storage: Any = topic.storage
        assert len(await storage._backend.pull(storage.stream, storage._consumer_name("d"),
                                               2)) == 2  # its reply lost: 3 and 4 held
        assert await topic.gc() == 0
        assert await read_all(topic, "d", 3) == [3, 4, 5]
        assert await topic.gc() == 6
    finally:
        await provider.close()


async def test_two_processes_reconnecting_one_subscriber_at_once(
    nats_server: BrokerServer,
) -> None:
    name = fresh("two-reconnect")
    await left_behind(nats_server.url, name)
    first = await open_provider(nats_server.url, poll_interval=0.2)
    second = await open_provider(nats_server.url, poll_interval=0.2)
    try:
        one: TopicCell[Any] = TopicCell(first.topic(name))
        two: TopicCell[Any] = TopicCell(second.topic(name))
        await one.storage.sync()  # type: ignore[attr-defined]
        await two.storage.sync()  # type: ignore[attr-defined]
        await asyncio.gather(one.reconnect("d"), two.reconnect("d"))
        assert await read_all(one, "d", 4) == [1, 2, 3, 4]
    finally:
        await first.close()
        await second.close()


async def test_two_processes_collecting_at_once(nats_server: BrokerServer) -> None:
    name = fresh("two-gc")
    await gc_ready(nats_server.url, name)
    first = await open_provider(nats_server.url, poll_interval=0.2)
    second = await open_provider(nats_server.url, poll_interval=0.2)
    try:
        one: TopicCell[Any] = TopicCell(first.topic(name))
        two: TopicCell[Any] = TopicCell(second.topic(name))
        await one.storage.sync()  # type: ignore[attr-defined]
        await two.storage.sync()  # type: ignore[attr-defined]
        collected = await asyncio.gather(one.gc(), two.gc())
        assert 3 in collected and set(collected) <= {0, 3}  # 0: the other had collected
        assert await read_all(one, "e", 2) == [3, 4]
    finally:
        await first.close()
        await second.close()


async def test_two_processes_subscribing_one_id_at_once_across_a_publish(
    nats_server: BrokerServer,
) -> None:
    """The second process read the stream's tail before a publish, the first subscribed
    after it: the second's create, at the older tail, meets the first's consumer."""
    name = fresh("two-subscribe")
    first = await open_provider(nats_server.url, poll_interval=0.2)
    second = await open_provider(nats_server.url, poll_interval=0.2)
    try:
        one: TopicCell[Any] = TopicCell(first.topic(name))
        two: TopicCell[Any] = TopicCell(second.topic(name))
        await one.publish("before")
        storage: Any = two.storage
        await storage.sync()
        js = storage._backend.js
        stream_info = js.stream_info

        async def tail_then_the_other(stream: str) -> Any:
            info = await stream_info(stream)
            js.stream_info = stream_info
            await one.publish("between")
            assert await one.subscribe("x") is SubscribeOutcome.Subscribed
            return info

        js.stream_info = tail_then_the_other
        assert await two.subscribe("x") is SubscribeOutcome.AlreadyConnected
        await one.publish("after")
        assert await two.advance("x", timeout=10) == "after"
    finally:
        await first.close()
        await second.close()


async def delete_consumer(url: str, stream: str, consumer: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().delete_consumer(stream, consumer)
    finally:
        await nc.close()


async def test_a_subscriber_whose_consumer_was_deleted_outside_raises_a_typed_error(
    nats_server: BrokerServer,
) -> None:
    # JetStream leaves a pull from a missing consumer unanswered: a short timeout
    provider = await open_provider(nats_server.url, poll_interval=0.2, timeout=1.0)
    try:
        topic: TopicCell[Any] = TopicCell(provider.topic(fresh("consumer-rm")))
        await topic.subscribe("d")
        await topic.publish("x")
        storage: Any = topic.storage
        await storage.sync()
        await delete_consumer(nats_server.url, storage.stream, storage._consumer_name("d"))
        for _ in range(2):  # before and after the mirror saw it gone
            with pytest.raises(SubscriberConsumerLost, match=r"'d'.*subscribe it again"
                               ) as raised:
                await topic.advance("d", timeout=10)
            assert isinstance(raised.value, UnknownSubscriber)
        await storage.sync()
        with pytest.raises(SubscriberConsumerLost):  # a poll the mirror saw it gone for
            await topic.poll("d")
        assert await topic.subscribe("d") is not None
        await topic.publish("y")
        assert await topic.advance("d", timeout=10) == "y"
    finally:
        await provider.close()


async def test_a_queue_and_a_work_queue_whose_consumer_was_deleted_declare_it_again(
    nats_server: BrokerServer,
) -> None:
    async with connect(nats_server.url, timeout=1.0) as client:
        queue = client.queue(fresh("queue-rm"))
        await queue.push("kept")
        await delete_consumer(nats_server.url, queue.storage.stream, "lq")  # type: ignore[attr-defined]
        assert await queue.pop(timeout=10) == "kept"
        jobs = client.work_queue(fresh("work-rm"), visibility_timeout=30)
        await jobs.push("kept")
        await delete_consumer(nats_server.url, jobs.storage.stream, "lq")  # type: ignore[attr-defined]
        delivery = await jobs.claim("w", timeout=10)
        assert delivery.value == "kept"
        await jobs.ack("w", delivery.delivery_id)


async def test_a_pull_from_a_consumer_deleted_outside_does_not_wait_out_its_timeout(
    nats_server: BrokerServer,
) -> None:
    """JetStream 2.9 leaves that pull unanswered: the consumer is looked up once the pull
    is not answered at once, not after the request timeout (no pull ends timed out)."""
    provider = await open_provider(nats_server.url, poll_interval=0.2, timeout=5.0)
    timed_out: list[str] = []
    replies = provider.replies
    pull = replies.pull

    async def recorded(stream: str, consumer: str, n: int, *args: Any) -> Any:
        try:
            return await pull(stream, consumer, n, *args)
        except nats.errors.TimeoutError:
            timed_out.append(stream)
            raise

    replies.pull = recorded
    try:
        queue: Any = QueueCell(provider.queue(fresh("prompt-queue")))
        await queue.push("kept")
        await delete_consumer(nats_server.url, queue.storage.stream, "lq")
        assert await queue.pop(timeout=10) == "kept"
        jobs: Any = WorkQueueCell(provider.work_queue(
            fresh("prompt-work"), visibility_timeout=30, max_deliveries=3))
        await jobs.push("kept")
        await delete_consumer(nats_server.url, jobs.storage.stream, "lq")
        assert (await jobs.claim("w", timeout=10)).value == "kept"
        topic: TopicCell[Any] = TopicCell(provider.topic(fresh("prompt-topic")))
        await topic.subscribe("d")
        await topic.publish("x")
        storage: Any = topic.storage
        await storage.sync()
        await delete_consumer(nats_server.url, storage.stream, storage._consumer_name("d"))
        with pytest.raises(SubscriberConsumerLost):
            await topic.advance("d", timeout=10)
        assert timed_out == []
    finally:
        await provider.close()
