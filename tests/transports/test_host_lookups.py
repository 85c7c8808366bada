"""A dial of a host name looks it up once: the transport connects to the addresses found
(TCP, WebSocket and their TLS forms), and TLS still verifies the certificate against the
name dialled, not the address it was looked up to."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lazily_transports import LinkStream, TLSFiles, dial, listen, probe
from lazily_transports._core._lookups import connected_socket
from transport_helpers import make_config

from tests.certs import TestCA

pytestmark = pytest.mark.timeout(30)

NAMED = "peer.lazily-counted.test"


@pytest.fixture
async def lookups(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[str]]:
    """:data:`NAMED` resolves to 127.0.0.1; yields each lookup of it (asyncio's resolver
    calls ``socket.getaddrinfo``, uvloop's is libuv's and not counted)."""
    if type(asyncio.get_running_loop()).__module__.startswith("uvloop"):
        pytest.skip("uvloop resolves names with libuv, not socket.getaddrinfo (not faked)")
    real = socket.getaddrinfo
    seen: list[str] = []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == NAMED:
            seen.append(host)
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield seen


async def _accept(stream: LinkStream) -> None:
    """Take the link; it is closed on return."""


def _named(listening: str) -> str:
    """``listening``'s address (bound to 127.0.0.1) with :data:`NAMED` as its host."""
    return listening.replace("127.0.0.1", NAMED)


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("ca"))


def _contexts(authority: TestCA, hosts: tuple[str, ...]) -> tuple[ssl.SSLContext,
                                                                   ssl.SSLContext]:
    """A listener's context with a certificate for ``hosts``, and a dialer's."""
    server, client = authority.issue("n2", hosts), authority.issue("n1")
    return (TLSFiles(server.certificate, server.key, server.ca).server_context(),
            TLSFiles(client.certificate, client.key, client.ca).client_context())


@pytest.mark.parametrize("scheme", ["tcp", "ws", "tls", "wss"])
@pytest.mark.parametrize("reach", [dial, probe])
async def test_a_dial_or_probe_of_a_name_looks_it_up_once(
        lookups: list[str], authority: TestCA, scheme: str, reach: Any) -> None:
    server, client = (_contexts(authority, (NAMED,)) if scheme in ("tls", "wss")
                      else (None, None))
    path = "/raft" if scheme.startswith("w") else ""
    async with listen(f"{scheme}://127.0.0.1:0{path}", make_config(2), _accept,
                      ssl_context=server) as listener:
        for dials in (1, 2):
            reached = await reach(_named(listener.address), make_config(1),
                                  ssl_context=client)
            if isinstance(reached, LinkStream):
                await reached.aclose()
            assert lookups == [NAMED] * dials


@pytest.mark.parametrize("scheme", ["tls", "wss"])
async def test_tls_verifies_the_name_dialled_not_the_address_it_was_looked_up_to(
        lookups: list[str], authority: TestCA, scheme: str, tmp_path: Path) -> None:
    """The listener's certificate names 127.0.0.1, where the name leads, but not the
    name: refused."""
    server, client = _contexts(authority, ("127.0.0.1",))
    path = "/raft" if scheme == "wss" else ""
    async with listen(f"{scheme}://127.0.0.1:0{path}", make_config(2), _accept,
                      ssl_context=server) as listener:
        with pytest.raises(ssl.SSLCertVerificationError, match=f"'{NAMED}'"):
            await dial(_named(listener.address), make_config(1), ssl_context=client)
        assert lookups == [NAMED]


async def test_the_addresses_found_are_tried_in_order_until_one_accepts() -> None:
    listening = socket.create_server(("127.0.0.1", 0))
    closed = socket.create_server(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in (closed, listening)]
    closed.close()  # nothing listens on ports[0] now
    found = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)) for port in ports]
    try:
        sock = await connected_socket(found)
        assert sock.getpeername() == ("127.0.0.1", ports[1])
        sock.close()
        with pytest.raises(ConnectionRefusedError, match=str(ports[0])):
            await connected_socket(found[:1])
        with pytest.raises(ConnectionRefusedError) as both:
            await connected_socket([found[0], (socket.AF_INET, socket.SOCK_STREAM, 6, "",
                                               ("127.0.0.2", ports[0]))])
        assert str(ports[0]) in str(both.value) and "127.0.0.2" in str(both.value)
    finally:
        listening.close()
