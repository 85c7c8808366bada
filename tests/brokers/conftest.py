"""Real brokers for the broker-backend tests: one ``redis-server`` (appendonly,
``appendfsync always``) and one ``nats-server`` (JetStream, file storage) per module, on
free loopback ports in temporary directories, always stopped. Tests use fresh object
names, so they share the servers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from lazily_queue.brokers.servers import BrokerServer, NatsServer, RedisServer, find_binary

_names = itertools.count()


def fresh(prefix: str) -> str:
    """An object name no other test uses."""
    return f"{prefix}-{next(_names)}"


def _server(cls: type[BrokerServer], **options: Any) -> Iterator[BrokerServer]:
    if find_binary(cls.binary) is None:
        pytest.skip(f"{cls.binary} is not installed (apt install {cls.binary})")
    server = cls(**options)
    asyncio.run(server.start())
    try:
        yield server
    finally:
        asyncio.run(server.__aexit__(None, None, None))


@pytest.fixture(scope="module")
def redis_server() -> Iterator[BrokerServer]:
    yield from _server(RedisServer)


@pytest.fixture(scope="module")
def nats_server() -> Iterator[BrokerServer]:
    yield from _server(NatsServer)


@pytest.fixture(params=["nats", "redis"])
def broker_url(request: pytest.FixtureRequest) -> str:
    """The URL of a running broker of each kind."""
    server: BrokerServer = request.getfixturevalue(f"{request.param}_server")
    return server.url


@pytest.fixture
async def provider(broker_url: str) -> AsyncIterator[Any]:
    """A connected storage provider (short poll interval) for each kind of broker."""
    from lazily_queue.client.brokers import open_provider

    backend = await open_provider(broker_url, poll_interval=0.2, view_limit=100)
    try:
        yield backend
    finally:
        await backend.close()
