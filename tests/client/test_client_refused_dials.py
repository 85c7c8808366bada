"""Dials a client's members refuse: an address where an HTTP server answers (a member's
``http`` address given by mistake) can never become a link, so a client given only
such addresses fails at once, and a refusal is logged once per address until the
client links, however many rounds it dials meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Iterator

import pytest

from lazily_queue import Credentials, Unreachable, connect
from tests.canned_server import canned_server
from tests.client.limits_cluster import limited_cluster
from tests.client.test_client_cluster import TOKEN

pytestmark = pytest.mark.timeout(60)

WEB = Credentials("web", TOKEN)


@pytest.fixture
def http_server() -> Iterator[str]:
    """A ``tcp://`` address where an HTTP server answers every connection."""
    with answering(b"400 Bad Request") as address:
        yield address


@contextlib.contextmanager
def answering(status: bytes) -> Iterator[str]:
    """A ``tcp://`` address where every connection is answered ``status``."""
    with canned_server(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\nno") as port:
        yield f"tcp://127.0.0.1:{port}"


def refusals(caplog: pytest.LogCaptureFixture, address: str) -> int:
    return sum(r.getMessage().startswith(f"handshake with {address} refused")
               for r in caplog.records)


async def test_http_servers_at_every_address_fail_at_once(
    http_server: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    began = time.monotonic()
    with pytest.raises(Unreachable) as info:
        await connect([http_server], WEB, connect_timeout=20).start()
    assert time.monotonic() - began < 5  # not connect_timeout
    assert "an HTTP server answered at every address given; dial a member's listen or " \
        "clients address" in str(info.value)
    assert refusals(caplog, http_server) == 1


async def test_an_http_answer_to_a_websocket_upgrade_fails_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    for status in (b"200 OK", b"404 Not Found"):
        with answering(status) as address:
            began = time.monotonic()
            with pytest.raises(Unreachable, match=f"answered HTTP {status[:3].decode()} 'no'"
                               ".*dial a link address"):
                await connect([address.replace("tcp:", "ws:")], WEB,
                              connect_timeout=20).start()
            assert time.monotonic() - began < 5  # not connect_timeout
            assert refusals(caplog, address.replace("tcp:", "ws:")) == 1


@pytest.mark.parametrize("scheme", ["tls:", "wss:"])
async def test_a_tls_dial_of_an_http_server_fails_at_once(http_server: str, scheme: str) -> None:
    began = time.monotonic()
    with pytest.raises(Unreachable, match=r"for good .*did not answer in TLS: it is a "
                       r"plain link or HTTP address"):
        await connect(http_server.replace("tcp:", scheme), WEB, connect_timeout=20,
                      ssl_context=ssl.create_default_context()).start()
    assert time.monotonic() - began < 5  # not connect_timeout


async def test_a_proxy_that_cannot_reach_its_member_yet_is_waited_for() -> None:
    with answering(b"502 Bad Gateway") as address:
        began = time.monotonic()
        with pytest.raises(Unreachable, match=r"no member accepted \(.*502"):
            await connect([address.replace("tcp:", "ws:")], WEB, connect_timeout=1.5).start()
        assert time.monotonic() - began >= 1.4  # dialled round after round


async def test_a_member_not_up_yet_is_waited_for_and_a_refusal_logged_once(
    http_server: str, tmp_path: object, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    began = time.monotonic()
    with pytest.raises(Unreachable, match="no member accepted \\(") as info:
        await connect([http_server, f"unix://{tmp_path}/not-up.sock"], WEB,
                      connect_timeout=1.5).start()
    assert time.monotonic() - began >= 1.4  # dialled round after round
    assert "not-up.sock: unreachable" in str(info.value)
    assert ("No such file or directory: nothing listens there (is the member running, and "
            "is this its `listen` or `clients` address?)") in str(info.value)
    assert refusals(caplog, http_server) == 1


async def test_a_port_where_nothing_listens_is_named_with_what_to_check() -> None:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(Unreachable) as info:
            await connect([f"tcp://127.0.0.1:{port}"], WEB, connect_timeout=1).start()
    text = str(info.value)  # the OS error's words are the loop's (asyncio's, uvloop's)
    assert f"tcp://127.0.0.1:{port}: unreachable: " in text, text
    assert text.endswith(": nothing listens there (is the member running, and is this its "
                         "`listen` or `clients` address?))"), text


async def test_a_follower_beside_an_http_address_is_kept(
    http_server: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """The follower names a leader the client has no address of: the client stays
    linked to it rather than try the HTTP address, which cannot be the leader's."""
    caplog.set_level(logging.WARNING)
    async with limited_cluster(3, produce=True) as (cluster, addresses):
        leader = (await cluster.leader()).node_id
        follower = next(a for a in addresses if not a.endswith(f"-{leader}"))
        async with connect([http_server, follower], WEB, op_timeout=5) as client:
            assert await client.queue("jobs").push(1) is None
            assert client.member != leader
    assert refusals(caplog, http_server) == 1


async def test_a_refusal_is_logged_again_after_the_client_linked(
    http_server: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """Linked between two outages, a long-running client logs the refusal of each."""
    caplog.set_level(logging.WARNING)
    async with limited_cluster(1, produce=True) as (cluster, addresses):
        client = connect([http_server, *addresses], WEB, op_timeout=1)
        await client.start()
        assert refusals(caplog, http_server) == 1
        node = next(iter(cluster.nodes.values()))
        await node.stop()  # the client dials its addresses again, round after round
        for _ in range(200):
            if refusals(caplog, http_server) >= 2:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # more rounds: still not logged again
        await client.close()
    assert refusals(caplog, http_server) == 2
