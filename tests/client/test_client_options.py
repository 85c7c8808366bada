"""A client refuses options and addresses it cannot run with, and a closed client's
barrier fails with ClientClosed at once (as every other call of a closed client does)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lazily_queue import ClientClosed, Credentials, LazilyQueueError, Node, Unreachable, connect
from lazily_queue.client import dialling
from lazily_queue.errors import InvalidConfiguration
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(("address", "says"), [
    ("127.0.0.1:7101", "reached at unix:, tcp://"),      # no scheme, in a list
    ("unix://member.sock", "unix:///absolute/path"),      # a host part: not dialled
    ("tcp://127.0.0.1", "tcp://HOST:PORT"),               # no port
    ("tcp://127.0.0.1:0", "cannot dial port 0"),
])
def test_an_address_no_member_has_is_refused_at_connect(address: str, says: str) -> None:
    with pytest.raises(LazilyQueueError, match=says):  # one line, not a traceback
        connect(["unix:member.sock", address], Credentials("web", TOKEN))


@pytest.mark.parametrize("address", ["tls://127.0.0.1:7311", "wss://127.0.0.1:7311/link"])
def test_a_tls_address_without_tls_settings_is_refused_at_connect(address: str) -> None:
    with pytest.raises(InvalidConfiguration, match=r"ssl_context=.*CertificateCredentials"):
        connect(["unix:member.sock", address], Credentials("web", TOKEN))


async def test_a_link_loop_that_fails_says_why_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("a transport that cannot dial")

    monkeypatch.setattr(dialling, "dial", broken)
    client = connect("unix:/nowhere.sock", Credentials("web", TOKEN), connect_timeout=30)
    with pytest.raises(Unreachable, match=r"stopped linking: RuntimeError.*cannot dial"):
        await asyncio.wait_for(client.start(), 5)


@pytest.mark.parametrize("options", [
    {"max_in_flight": 0}, {"max_in_flight": -3}, {"max_in_flight": 2.5},
    {"max_in_flight": True}, {"ping_interval": 0}, {"ping_interval": -1},
    {"ping_interval": math.nan}, {"ping_timeout": math.nan}, {"ping_timeout": 0},
    {"op_timeout": math.nan}, {"op_timeout": -1}, {"op_timeout": "5"},
    {"connect_timeout": math.inf}, {"connect_timeout": 0},
])
def test_options_no_client_can_run_with_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidConfiguration, match=next(iter(options))):
        connect("unix:/nowhere.sock", Credentials("web", TOKEN), **options)


@pytest.fixture
async def member() -> AsyncIterator[Node]:
    async with one_member() as node:
        yield node


async def test_a_closed_clients_barrier_fails_with_client_closed_at_once(
        member: Node) -> None:
    assert member.listen is not None
    client = await connect(member.listen, Credentials("web", TOKEN), op_timeout=20)
    await client.barrier()
    await client.close()
    with pytest.raises(ClientClosed, match="barrier"):
        await asyncio.wait_for(client.barrier(), 2)
    never = connect(member.listen, Credentials("web", TOKEN), op_timeout=20)
    with pytest.raises(ClientClosed):
        await asyncio.wait_for(never.barrier(), 2)  # never started


async def test_a_barrier_waiting_for_a_link_fails_when_the_client_closes(
        member: Node) -> None:
    assert member.listen is not None
    client = await connect(member.listen, Credentials("web", TOKEN), op_timeout=20)
    client._linked.clear()  # as between two links
    waiting = asyncio.ensure_future(client.barrier())
    await asyncio.sleep(0.1)
    await client.close()
    with pytest.raises(ClientClosed):
        await asyncio.wait_for(waiting, 2)
