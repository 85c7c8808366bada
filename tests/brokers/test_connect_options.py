"""connect() refuses options and credential keys its broker does not take, and a Redis
database that is not a number, with a typed error before connecting (they were a raw
TypeError after connecting, which left the NATS connection open, or ignored)."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import InvalidConfiguration, connect
from lazily_queue.brokers import UnsupportedAddress


@pytest.mark.parametrize(("address", "options"), [
    ("nats://127.0.0.1:1", {"pol_interval": 1}),
    ("nats://127.0.0.1:1", {"prefix": "x"}),
    ("nats://127.0.0.1:1", {"credentials": {"username": "a", "password": "b"}}),
    ("redis://127.0.0.1:1/0", {"socket_timeout": 5}),
    ("redis://127.0.0.1:1/0", {"credentials": {"token": "x"}}),
])
async def test_an_option_the_broker_does_not_take_is_refused_before_connecting(
    address: str, options: dict[str, Any],
) -> None:
    # port 1: nothing listens, so only a check made before connecting passes this
    with pytest.raises(InvalidConfiguration, match=r"not|no option"):
        await connect(address, **options)


async def test_a_redis_database_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(UnsupportedAddress, match="not a number"):
        await connect("redis://127.0.0.1:1/abc")
