"""A queue or work queue mirror whose refresh and this process's own operations answer in any order:
the readers report only changes the broker made (no push counted twice, no state read
before a push undoing it, no empty pop older than a read), so an effect on ``head`` or
``len`` reruns only when they change. Each test holds one reply until another landed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from lazily_queue.brokers.codec import encode
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider
from lazily_queue.core.queue import POP, PUSH, QueuePopError

from .conftest import fresh

#: The Redis script, or the NATS call (of the storage's backend), of a push, a refresh's
#: read and a pop.
SCRIPT = {"push": "QUEUE_PUSH", "read": "QUEUE_READ", "pop": "QUEUE_POP",
          "work push": "WORK_PUSH", "work read": "WORK_READ"}
NATS_CALL = {"push": "publish", "read": "js.stream_info",
             "work push": "publish", "work read": "js.consumer_info", "claim": "pull"}


class Held:
    """The reply of the next matching call, held after the broker applied the call."""

    def __init__(self) -> None:
        self.applied = asyncio.Event()
        self.release = asyncio.Event()
        self.armed = True


@contextmanager
def hold(storage: Any, kind: str, what: str) -> Iterator[Held]:
    """Hold the reply of ``storage``'s next ``what`` (a key of :data:`SCRIPT`) until
    released."""
    path = "run" if kind == "redis" else NATS_CALL[what]
    *owners, name = path.split(".")
    owner = storage._backend
    for part in owners:
        owner = getattr(owner, part)
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)
    own = name in vars(owner)  # a hold around this one put it there
    held = Held()

    async def call(*args: Any, **kwargs: Any) -> Any:
        matches = held.armed and (path != "run" or args[0] == SCRIPT[what])
        result = await original(*args, **kwargs)
        if matches:
            held.armed = False
            held.applied.set()
            await held.release.wait()
        return result

    setattr(owner, name, call)
    try:
        yield held
    finally:
        held.release.set()
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


@pytest.fixture(params=["nats", "redis"])
def server(request: pytest.FixtureRequest) -> BrokerServer:
    result: BrokerServer = request.getfixturevalue(f"{request.param}_server")
    return result


async def _queue(server: BrokerServer) -> tuple[Any, Any, list[tuple[int, int]]]:
    provider = await open_provider(server.url, poll_interval=60.0, view_limit=10)
    storage: Any = provider.queue(fresh("order"), capacity=3)
    await storage.sync()
    events: list[tuple[int, int]] = []
    storage.set_change_listener(lambda op, pre: events.append((op, pre)))
    return provider, storage, events


def _kind(server: BrokerServer) -> str:
    return "nats" if server.url.startswith("nats") else "redis"


async def test_a_push_a_refresh_counted_first_is_not_counted_again(
        server: BrokerServer) -> None:
    provider, storage, events = await _queue(server)
    try:
        with hold(storage, _kind(server), "push") as push:
            offer = asyncio.ensure_future(storage.offer("a"))
            await push.applied.wait()
            await storage.sync()  # reads the state after the push
            push.release.set()
            assert await offer is None
        assert storage.len() == 1
        await storage.sync()
        assert storage.len() == 1 and storage.peek() == "a"
        assert events == [(PUSH, 0)]
    finally:
        await provider.close()


async def test_a_state_read_before_a_push_does_not_undo_it(server: BrokerServer) -> None:
    provider, storage, events = await _queue(server)
    try:
        with hold(storage, _kind(server), "read") as read:
            refresh = asyncio.ensure_future(storage.sync())
            await read.applied.wait()  # read the empty queue
            assert await storage.offer("a") is None
            assert storage.len() == 1
            read.release.set()
            await refresh
        assert storage.len() == 1 and storage.peek() == "a"
        await storage.sync()
        assert storage.len() == 1 and storage.peek() == "a"
        assert events == [(PUSH, 0)]
    finally:
        await provider.close()


async def test_an_empty_pop_older_than_the_mirror_is_ignored(
        redis_server: BrokerServer) -> None:
    provider, storage, events = await _queue(redis_server)
    try:
        with hold(storage, "redis", "pop") as pop:
            popping = asyncio.ensure_future(storage.poll_many(1))
            await pop.applied.wait()  # found the queue empty
            with hold(storage, "redis", "push") as push:
                offer = asyncio.ensure_future(storage.offer("a"))
                await push.applied.wait()
                await storage.sync()  # reads the state after the push
                pop.release.set()
                assert await popping is QueuePopError.Empty
                assert storage.len() == 1
                push.release.set()
                assert await offer is None
        await storage.sync()
        assert storage.len() == 1 and storage.peek() == "a"
        assert events == [(PUSH, 0)]
        assert (POP, 1) not in events
    finally:
        await provider.close()


async def test_a_state_read_before_an_empty_pop_does_not_undo_it(
        redis_server: BrokerServer) -> None:
    provider, storage, events = await _queue(redis_server)
    try:
        assert await storage.offer("a") is None
        await storage.sync()
        events.clear()
        with hold(storage, "redis", "read") as read:
            refresh = asyncio.ensure_future(storage.sync())
            await read.applied.wait()  # read ["a"]
            assert await storage.poll_many(1) == ["a"]
            assert await storage.poll_many(1) is QueuePopError.Empty
            assert storage.len() == 0
            read.release.set()
            await refresh
            assert storage.len() == 0
        await storage.sync()
        assert storage.len() == 0
        assert events == [(POP, 1)]
    finally:
        await provider.close()


async def _work_queue(server: BrokerServer) -> tuple[Any, Any, list[int]]:
    provider = await open_provider(server.url, poll_interval=60.0, view_limit=10)
    storage: Any = provider.work_queue(fresh("order"), visibility_timeout=60.0,
                                       max_deliveries=3)
    await storage.sync()
    masks: list[int] = []
    storage.set_change_listener(masks.append)
    return provider, storage, masks


async def test_a_work_item_a_refresh_counted_first_is_not_counted_again(
        server: BrokerServer) -> None:
    provider, storage, masks = await _work_queue(server)
    try:
        with hold(storage, _kind(server), "work push") as push:
            pushing = asyncio.ensure_future(storage.push("a"))
            await push.applied.wait()
            await storage.sync()  # reads the counts after the push
            push.release.set()
            await pushing
        assert storage.pending_len() == 1
        await storage.sync()
        assert storage.pending_len() == 1
        assert len(masks) == 1
    finally:
        await provider.close()


async def test_work_counts_read_before_a_push_do_not_undo_it(server: BrokerServer) -> None:
    provider, storage, masks = await _work_queue(server)
    try:
        with hold(storage, _kind(server), "work read") as read:
            refresh = asyncio.ensure_future(storage.sync())
            await read.applied.wait()  # read the empty work queue
            await storage.push("a")
            assert storage.pending_len() == 1
            read.release.set()
            await refresh
        assert storage.pending_len() == 1
        await storage.sync()
        assert storage.pending_len() == 1
        assert len(masks) == 1
    finally:
        await provider.close()


@pytest.mark.parametrize("newer", ["push", "read"])
async def test_an_empty_claim_answered_after_newer_counts_does_not_undo_them(
        nats_server: BrokerServer, newer: str) -> None:
    """An empty claim (the pull found nothing) answered after a push of this process or
    a read that counts an item the pull did not see leaves the item pending."""
    provider, storage, masks = await _work_queue(nats_server)
    try:
        with hold(storage, "nats", "claim") as claim:
            claiming = asyncio.ensure_future(storage.poll_many("w", 1, None))
            await claim.applied.wait()  # the pull found the work queue empty
            if newer == "push":
                await storage.push("a")
            else:
                await provider.publish(storage.subject, encode("a"))  # another process's
                await storage.sync()
            assert storage.pending_len() == 1
            claim.release.set()
            assert (await claiming).result == []
            assert storage.pending_len() == 1
        await storage.sync()
        assert storage.pending_len() == 1
        assert len(masks) == 1
    finally:
        await provider.close()
