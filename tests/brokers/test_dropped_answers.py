"""Requests waiting for nats-server's answer when the connection drops (the server
killed or its host gone): core NATS keeps no reply for a connection that is gone, so
they fail at once instead of at their timeout. A push is then sent once more under
its ``Nats-Msg-Id`` when the server is back (stored once); a claim raises
``BrokerUnavailable`` naming the drop. So on the application's own connection."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS

from lazily_queue import QueueCell, WorkQueueCell, connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.nats_backend import NatsJetStreamStorage
from lazily_queue.brokers.nats_connection import Outages
from lazily_queue.brokers.nats_requests import ConnectionDropped
from lazily_queue.brokers.servers import NatsServer, find_binary

from .conftest import fresh
from .link_cutter import wait_for

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(find_binary("nats-server") is None,
                                 reason="nats-server is not installed")]


async def test_requests_in_flight_when_the_server_dies_do_not_wait_out_their_timeout(
) -> None:
    """The server is paused, so the push and the claim's pull wait, then killed and
    started again on its data. The client's timeout (600 s) is far past the test's."""
    async with NatsServer() as server, \
            connect(server.url, poll_interval=0.2, timeout=600) as client:
        queue = client.queue(fresh("dropped"))
        await queue.push("first")
        jobs = client.work_queue(fresh("dropped-jobs"), visibility_timeout=30)
        await jobs.push("job")
        await jobs.storage.sync()  # type: ignore[attr-defined]
        replies: Any = queue.storage._backend.replies  # type: ignore[attr-defined]
        await server.pause()
        pushing = asyncio.ensure_future(queue.push("second"))
        claiming = asyncio.ensure_future(jobs.claim("w", timeout=600))
        js: Any = queue.storage._backend.js  # type: ignore[attr-defined]
        reading = asyncio.ensure_future(  # a JetStream API request, as a refresh makes
            js.stream_info(jobs.storage.stream))  # type: ignore[attr-defined]
        await wait_for(lambda: len(replies._inflight) == 2 and replies.nc._resp_map,
                       "the push, the pull and the read to wait")
        await server.stop(kill=True)
        await server.start()
        async with asyncio.timeout(60):
            await pushing
            with pytest.raises(BrokerUnavailable, match=r"the connection dropped while claiming"):
                await claiming
            with pytest.raises(TimeoutError):
                await reading
            assert [await queue.pop(timeout=5), await queue.pop(timeout=5)] == [
                "first", "second"]
            delivery = await jobs.claim("w", timeout=60)
        assert delivery.value == "job"


@pytest.mark.parametrize("made", ["after connect", "before connect"])
async def test_requests_on_the_applications_connection_fail_at_once_when_it_drops(
        made: str) -> None:
    """A storage on the application's own connection (``NatsJetStreamStorage(nc)``,
    made before or after ``nc.connect()``, which sets the connection's callbacks):
    its claim in flight when nats-server is killed raises ``BrokerUnavailable`` naming
    the drop, not at its timeout (600 s), its push is sent again and stored once, and
    the application's ``disconnected_cb`` is still called and its own request is left
    to its own timeout; once the storage is closed
    the connection's callback is the application's again."""
    told: list[str] = []

    async def disconnected() -> None:
        told.append("disconnected")

    async with NatsServer() as server:
        nc = NATS()
        if made == "before connect":
            storage = NatsJetStreamStorage(nc, poll_interval=0.2, timeout=600)
        options: dict[str, Any] = {"disconnected_cb": disconnected,
                                   "reconnect_time_wait": 0.1, "max_reconnect_attempts": -1}
        await nc.connect(server.url, **options)
        if made == "after connect":
            storage = NatsJetStreamStorage(nc, poll_interval=0.2, timeout=600)
        try:
            queue = QueueCell(storage.queue(fresh("own-dropped")))
            jobs = WorkQueueCell(storage.work_queue(
                fresh("own-dropped-jobs"), visibility_timeout=30, max_deliveries=5))
            await queue.push("first")
            await jobs.push("job")
            await jobs.storage.sync()  # type: ignore[attr-defined]
            await server.pause()
            pushing = asyncio.ensure_future(queue.push("second"))
            claiming = asyncio.ensure_future(jobs.claim("w", timeout=600))
            asking = asyncio.ensure_future(nc.request("app.question", b"", timeout=3))
            await wait_for(lambda: len(storage.replies._inflight) == 2 and nc._resp_map,
                           "the push, the pull and the application's request to wait")
            await server.stop(kill=True)
            await server.start()
            async with asyncio.timeout(60):
                await pushing
                with pytest.raises(BrokerUnavailable,
                                   match=r"the connection dropped while claiming"):
                    await claiming
                assert [await queue.pop(timeout=5), await queue.pop(timeout=5)] == [
                    "first", "second"]
                delivery = await jobs.claim("w", timeout=60)
            assert delivery.value == "job"
            assert told == ["disconnected"]
            with pytest.raises(nats.errors.TimeoutError) as caught:  # its own timeout's
                await asking
            assert not isinstance(caught.value, ConnectionDropped)
        finally:
            await storage.close()
            assert nc._disconnected_cb is disconnected
            await nc.close()


def test_a_connection_without_nats_pys_callback_slot_is_followed_by_its_count() -> None:
    """A connection object without ``_disconnected_cb`` (another nats-py) is followed
    by its reconnection count alone: nothing is chained, closing puts nothing back."""

    class Bare:
        stats = {"reconnects": 0}

    nc: Any = Bare()
    outages = Outages().follow(nc)
    told: list[str] = []
    outages.listeners.append(lambda: told.append("reconnected"))
    nc.stats = {"reconnects": 1}
    outages.check()
    outages.unfollow()
    assert told == ["reconnected"] and not hasattr(nc, "_disconnected_cb")


async def test_outages_following_one_connection_chain_its_callback_once_each() -> None:
    """Two storages on one application connection each chain its ``disconnected_cb``
    once: checking before every operation does not chain them again and again around
    each other, and a drop calls each one's ``dropped`` once and the application's
    callback once."""
    called: list[str] = []

    async def theirs() -> None:
        called.append("app")

    class _Conn:
        stats = {"reconnects": 0}
        _disconnected_cb: Any = None

    nc = _Conn()
    nc._disconnected_cb = theirs
    first, second = Outages(), Outages()
    first.dropped.append(lambda: called.append("first"))
    second.dropped.append(lambda: called.append("second"))
    first.follow(nc)  # type: ignore[arg-type]
    second.follow(nc)  # type: ignore[arg-type]
    for _ in range(5):
        first.check()
        second.check()
    await nc._disconnected_cb()
    assert sorted(called) == ["app", "first", "second"]
