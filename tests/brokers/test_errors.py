"""Bad input against real brokers: each a clear typed error, nothing changed or lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from lazily_queue import InvalidConfiguration, QueueCell, WorkQueueCell, connect
from lazily_queue.brokers import (
    BrokerAuthenticationFailed,
    BrokerUnavailable,
    IncompatibleBrokerObject,
    UnsupportedAddress,
)
from lazily_queue.brokers.nats_backend import NatsJetStreamStorage
from lazily_queue.brokers.servers import BrokerServer, NatsServer, RedisServer, free_port
from lazily_queue.client.brokers import open_provider

from .conftest import _server, fresh


@pytest.fixture(scope="module")
def locked_redis() -> Iterator[BrokerServer]:
    yield from _server(RedisServer, password="s3cret")


@pytest.fixture(scope="module")
def locked_nats() -> Iterator[BrokerServer]:
    yield from _server(NatsServer, password="s3cret")


@pytest.mark.parametrize("scheme", ["nats", "redis"])
async def test_an_unreachable_broker_is_a_typed_error(scheme: str) -> None:
    port = free_port()
    with pytest.raises(BrokerUnavailable, match=r"127\.0\.0\.1") as info:
        await connect(f"{scheme}://127.0.0.1:{port}")
    # the cause (nats-py's own error, NoServersError, names none) and what to check
    assert str(info.value).endswith(
        f"Connect call failed ('127.0.0.1', {port}); check that the server runs at that "
        "address and that this host can reach it"), info.value


async def test_an_unreachable_nats_address_is_tried_twice_not_sixty_times(
        caplog: pytest.LogCaptureFixture) -> None:
    """nats-py's server pool tries a refused address again and again (60 times by
    default, 0.25 s apart here); connect() gives up after its first retry."""
    caplog.set_level(logging.DEBUG, logger="lazily_queue.brokers.nats_backend")
    with pytest.raises(BrokerUnavailable):
        await connect(f"nats://127.0.0.1:{free_port()}")
    attempts = [r for r in caplog.records if "Connect call failed" in r.getMessage()]
    assert len(attempts) == 2, [r.getMessage() for r in caplog.records]


async def test_a_redis_port_that_never_answers_fails_connect_in_its_connect_timeout() -> None:
    """A listening socket that never reads: the TCP connection is made, the PING is
    never answered; connect() fails after CONNECT_TIMEOUT, not the operations' 30 s."""
    import socket

    from lazily_queue.brokers.redis_backend import CONNECT_TIMEOUT

    silent = socket.socket()
    try:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        async with asyncio.timeout(CONNECT_TIMEOUT + 15):  # a hang, not a duration
            with pytest.raises(BrokerUnavailable) as info:
                await connect(f"redis://127.0.0.1:{port}/0")
        assert str(info.value).startswith(
            f"redis at redis://127.0.0.1:{port}/0 did not answer within 5 s of connecting")
    finally:
        silent.close()


async def test_a_wrong_redis_password_is_refused(locked_redis: BrokerServer) -> None:
    wrong = locked_redis.url.replace("s3cret", "wrong")
    with pytest.raises(BrokerAuthenticationFailed):
        await connect(wrong)
    bare = locked_redis.url.replace(":s3cret@", "")
    with pytest.raises(BrokerAuthenticationFailed):
        await connect(bare)
    async with connect(bare, "s3cret") as client:
        await client.queue(fresh("auth")).push(1)


async def test_a_wrong_nats_password_is_refused(locked_nats: BrokerServer) -> None:
    wrong = locked_nats.url.replace("s3cret", "wrong")
    with pytest.raises(BrokerAuthenticationFailed):
        await connect(wrong)
    bare = locked_nats.url.replace("lq:s3cret@", "")
    async with connect(bare, {"user": "lq", "password": "s3cret"}) as client:
        await client.queue(fresh("auth")).push(1)


@pytest.mark.parametrize("address", ["127.0.0.1:4222", "amqp://h", "http://h:1"])
def test_other_addresses_are_refused_naming_what_is_served(address: str) -> None:
    with pytest.raises(UnsupportedAddress, match=r"nats://.*unix:"):
        connect(address)


@pytest.mark.parametrize("address", ["unix:/tmp/node.sock", "tcp://127.0.0.1:7000",
                                     "ws://h:1/x"])
def test_a_cluster_address_needs_a_clients_credentials(address: str) -> None:
    with pytest.raises(InvalidConfiguration, match="needs its credentials"):
        connect(address)


async def test_redis_keys_of_another_type_are_left_alone(redis_server: BrokerServer) -> None:
    import redis.asyncio as aioredis

    name = fresh("taken")
    raw = aioredis.Redis.from_url(redis_server.url)
    try:
        await raw.set(f"lq:{{q:{name}}}:list", b"someone else's")
        provider = await open_provider(redis_server.url)
        try:
            q: QueueCell[Any] = QueueCell(provider.queue(name))
            with pytest.raises(IncompatibleBrokerObject, match="not a list"):
                await q.push(1)
        finally:
            await provider.close()
        assert await raw.get(f"lq:{{q:{name}}}:list") == b"someone else's"
    finally:
        await raw.aclose()


async def test_a_queue_reopened_with_another_capacity_is_refused(broker_url: str) -> None:
    name = fresh("cap")
    async with connect(broker_url) as client:
        await client.queue(name, capacity=2).push("kept")
    async with connect(broker_url) as client:
        with pytest.raises(IncompatibleBrokerObject):
            await client.queue(name, capacity=5).push("refused")
    async with connect(broker_url) as client:
        assert await client.queue(name, capacity=2).pop(timeout=10) == "kept"


async def test_a_work_queue_reopened_with_another_timeout_is_refused(broker_url: str) -> None:
    name = fresh("vt")
    async with connect(broker_url) as client:
        await client.work_queue(name, visibility_timeout=30).push("kept")
    async with connect(broker_url) as client:
        with pytest.raises(IncompatibleBrokerObject):
            await client.work_queue(name, visibility_timeout=5).push("refused")
    async with connect(broker_url) as client:
        jobs: WorkQueueCell = client.work_queue(name, visibility_timeout=30)
        delivery = await jobs.claim("w", timeout=10)
        assert delivery.value == "kept"


async def test_a_nats_stream_made_by_someone_else_is_left_alone(
    nats_server: BrokerServer,
) -> None:
    import nats
    from nats.js.api import RetentionPolicy

    name = fresh("foreign")
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=f"LQ_Q_{name}", subjects=[f"lq.q.{name}"],
                            retention=RetentionPolicy.LIMITS)
        await js.publish(f"lq.q.{name}", b"theirs")
        async with connect(nats_server.url) as client:
            with pytest.raises(IncompatibleBrokerObject, match="retention"):
                await client.queue(name).push(1)
        info = await js.stream_info(f"LQ_Q_{name}")
        assert info.state.messages == 1 and info.config.retention == RetentionPolicy.LIMITS
    finally:
        await nc.close()


async def test_an_operation_while_the_broker_is_down_fails_typed(broker_url: str) -> None:
    """The first operation on a broker that went away raises BrokerUnavailable promptly
    (a connection refused, not a hang)."""
    kind = broker_url.split(":")[0]
    server: BrokerServer = (RedisServer if kind == "redis" else NatsServer)()
    async with server:
        client = await asyncio.wait_for(
            connect(server.url, timeout=2.0) if kind == "nats" else connect(server.url), 60)
        try:
            q: QueueCell[Any] = client.queue(fresh("down"))
            await asyncio.wait_for(q.push(1), 60)
            await server.stop()
            with pytest.raises(BrokerUnavailable):
                await asyncio.wait_for(q.push(2), 60)
        finally:
            await asyncio.wait_for(client.close(), 60)


async def test_closing_returns_when_the_broker_connection_never_finishes_closing(
        nats_server: BrokerServer) -> None:
    provider = await open_provider(nats_server.url, timeout=0.5)
    q: QueueCell[Any] = QueueCell(provider.queue(fresh("stuck")))
    await q.push(1)
    assert isinstance(provider, NatsJetStreamStorage)

    async def never() -> None:
        await asyncio.Event().wait()

    provider.nc.drain = never  # type: ignore[method-assign]
    await asyncio.wait_for(provider.close(), 30)
    assert provider.nc.is_closed


async def test_a_redis_loading_its_data_is_not_called_unreachable() -> None:
    """Just started, redis answers ``LOADING`` until its AOF is read: the error names
    that, not an address to check."""
    import redis.exceptions

    from lazily_queue.brokers.redis_errors import mapped_errors

    with pytest.raises(BrokerUnavailable, match=r"is loading its data .*try again in a "):
        async with mapped_errors("redis://127.0.0.1:6379/0", "popping"):
            raise redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory")
