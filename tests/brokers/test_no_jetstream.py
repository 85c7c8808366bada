"""A nats-server without JetStream (its default): connect() says so and names the fix."""

from __future__ import annotations

from collections.abc import Iterator

import nats.js.errors as jserr
import pytest

from lazily_queue import connect
from lazily_queue.brokers import BrokerError, BrokerUnavailable
from lazily_queue.brokers.nats_api_errors import typed_error
from lazily_queue.brokers.servers import BrokerServer, NatsServer

from .conftest import _server, fresh


class PlainNatsServer(NatsServer):
    """``nats-server`` as it starts without options: no JetStream."""

    def command(self) -> list[str]:
        return [self.path, "-a", "127.0.0.1", "-p", str(self.port)]


@pytest.fixture(scope="module")
def plain_nats() -> Iterator[BrokerServer]:
    yield from _server(PlainNatsServer)


async def test_a_nats_server_without_jetstream_is_named_with_the_fix(
    plain_nats: BrokerServer,
) -> None:
    with pytest.raises(BrokerUnavailable, match=r"JetStream.*-js") as info:
        await connect(plain_nats.url)
    assert "127.0.0.1" in str(info.value) and "code=None" not in str(info.value)


async def test_other_refusals_with_a_503_are_not_reported_as_no_jetstream(
    nats_server: BrokerServer,
) -> None:
    async with connect(nats_server.url) as client:
        queue = client.queue(fresh("full"), capacity=1)
        await queue.push("a")
        with pytest.raises(BrokerError, match="maximum messages exceeded") as info:
            await queue.storage.unpoll(["b"])
        assert not isinstance(info.value, BrokerUnavailable)


@pytest.mark.parametrize("err_code", [10010, 10999])
def test_a_503_with_another_error_code_is_not_reported_as_no_jetstream(
    err_code: int,
) -> None:
    """JetStream answers many refusals with a 503, each with its own error code: only
    one without an error code, or with 10008, is the server's JetStream being
    unavailable; another is the refusal it names."""
    refusal = jserr.ServiceUnavailableError(code=503, err_code=err_code,
                                            description="another refusal")
    typed = typed_error(refusal, "nats://127.0.0.1:1", "pushing", 1 << 20)
    assert isinstance(typed, BrokerError) and not isinstance(typed, BrokerUnavailable)
    assert "another refusal" in str(typed)
