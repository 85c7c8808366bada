"""Malformed broker addresses, and an address that reaches another kind of server: a
typed error naming the cause (never a raw ValueError, TypeError or redis exception),
and no password in the message."""

from __future__ import annotations

import pytest

from lazily_queue import connect
from lazily_queue.brokers import BrokerUnavailable, UnsupportedAddress
from lazily_queue.brokers.servers import BrokerServer


@pytest.mark.parametrize(("address", "says"), [
    ("redis://:pw1@127.0.0.1:notaport/0", "port"),
    ("nats://u:pw1@127.0.0.1:notaport", "port"),
    ("redis://:pw1@127.0.0.1:6379/0?foo=bar", "foo"),
])
async def test_a_malformed_address_is_unsupported(address: str, says: str) -> None:
    with pytest.raises(UnsupportedAddress, match=says) as info:
        await connect(address)
    assert "pw1" not in str(info.value)


async def test_a_redis_address_at_a_nats_server_is_named(nats_server: BrokerServer) -> None:
    with pytest.raises(BrokerUnavailable, match="not a Redis server"):
        await connect(f"redis://127.0.0.1:{nats_server.port}/0")
