"""Address dispatch by scheme, address parsing, and listener binding rules."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest
from lazily_transports import (
    AddressError,
    ChannelAcceptor,
    DataChannel,
    LinkConfig,
    Listener,
    Transport,
    dial,
    get_transport,
    listen,
    register_transport,
    registered_schemes,
    scheme_of,
)
from lazily_transports.sockets import parse_tcp, parse_unix
from lazily_transports.websocket import parse_websocket
from transport_helpers import make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)


async def _idle(channel: DataChannel) -> None:
    await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("address", "scheme"),
    [
        ("memory://a", "memory"),
        ("unix:///tmp/x.sock", "unix"),
        ("unix:rel.sock", "unix"),
        ("tcp://127.0.0.1:7001", "tcp"),
        ("wss://h:1/p", "wss"),
    ],
)
def test_scheme_of(address: str, scheme: str) -> None:
    assert scheme_of(address) == scheme


@pytest.mark.parametrize("address", ["127.0.0.1:7001", "", "//x", "1tcp://x"])
def test_addresses_without_a_scheme_are_refused(address: str) -> None:
    with pytest.raises(AddressError, match="no scheme"):
        scheme_of(address)


async def test_unknown_scheme_names_the_known_ones() -> None:
    with pytest.raises(AddressError, match=r"no transport registered for scheme 'carrier'.*tcp"):
        await dial("carrier://pigeon", make_config(1))


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("unix://relative/path", "no host part"),
        ("unix:", "empty socket path"),
        ("unix:///" + "x" * 200, "limit is 107"),
    ],
)
def test_bad_unix_addresses(address: str, message: str) -> None:
    with pytest.raises(AddressError, match=message):
        parse_unix(address)


def test_tcp_and_websocket_parsing() -> None:
    assert parse_tcp("tcp://127.0.0.1:7001", listening=False) == ("127.0.0.1", 7001)
    assert parse_tcp("tcp://[::1]:0", listening=True) == ("::1", 0)
    assert parse_websocket("ws://127.0.0.1:8765/path", listening=False) == (
        "ws",
        "127.0.0.1",
        8765,
        "/path",
    )
    assert parse_websocket("wss://example.test", listening=False)[2:] == (443, "/")
    for bad in ("tcp://127.0.0.1", "tcp://127.0.0.1:99999", "tcp://h:1/path", "tcp://:5"):
        with pytest.raises(AddressError):
            parse_tcp(bad, listening=True)
    with pytest.raises(AddressError, match="cannot dial port 0"):
        parse_tcp("tcp://127.0.0.1:0", listening=False)
    with pytest.raises(AddressError, match="cannot dial port 0"):
        parse_websocket("ws://127.0.0.1:0/", listening=False)


async def test_tcp_port_zero_reports_the_bound_port() -> None:
    async with listen("tcp://127.0.0.1:0", make_config(2), _idle) as listener:
        host, port = parse_tcp(listener.address, listening=False)
        assert host == "127.0.0.1" and port > 0
        channel = await dial(listener.address, make_config(1))
        await channel.aclose()


async def test_relative_unix_path(monkeypatch: pytest.MonkeyPatch, short_tmp: Path) -> None:
    monkeypatch.chdir(short_tmp)
    async with listen("unix:rel.sock", make_config(2), _idle):
        assert (short_tmp / "rel.sock").is_socket()
        channel = await dial("unix:rel.sock", make_config(1))
        await channel.aclose()
    assert not (short_tmp / "rel.sock").exists()


async def test_unix_path_in_use_is_refused_but_stale_files_are_reclaimed(short_tmp: Path) -> None:
    address = f"unix://{short_tmp}/busy.sock"
    async with listen(address, make_config(2), _idle):
        with pytest.raises(OSError, match="already bound"):
            async with listen(address, make_config(3), _idle):
                pass
    import socket

    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(short_tmp / "busy.sock"))
    stale.close()
    async with listen(address, make_config(2), _idle):
        channel = await dial(address, make_config(1))
        await channel.aclose()
    (short_tmp / "plain").write_text("not a socket")
    with pytest.raises(OSError, match="not a socket"):
        async with listen(f"unix://{short_tmp}/plain", make_config(2), _idle):
            pass


async def test_memory_names_are_exclusive_and_must_exist() -> None:
    address = unique_memory_address()
    with pytest.raises(ConnectionRefusedError, match="no memory listener"):
        await dial(address, make_config(1))
    async with listen(address, make_config(2), _idle):
        with pytest.raises(OSError, match="already in use"):
            async with listen(address, make_config(3), _idle):
                pass
    with pytest.raises(AddressError):
        await dial("memory://", make_config(1))


async def test_websocket_listener_serves_only_its_path() -> None:
    async with listen("ws://127.0.0.1:0/raft", make_config(2), _idle) as listener:
        wrong = listener.address.replace("/raft", "/other")
        with pytest.raises(ConnectionError, match="404"):
            await dial(wrong, make_config(1))


async def test_registered_transport_is_used_for_its_scheme() -> None:
    memory = get_transport("memory")
    calls: list[str] = []

    class Aliased(Transport):
        async def connect(
            self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
        ) -> DataChannel:
            calls.append(address)
            return await memory.connect(address.replace("alias:", "memory://"), config)

        async def listen(
            self,
            address: str,
            config: LinkConfig,
            accept: ChannelAcceptor,
            *,
            ssl_context: ssl.SSLContext | None = None,
        ) -> Listener:
            return await memory.listen(address.replace("alias:", "memory://"), config, accept)

    transport = Aliased()
    register_transport("alias", transport)
    assert "alias" in registered_schemes()
    register_transport("alias", transport)  # the same object again is fine
    with pytest.raises(ValueError, match="already registered"):
        register_transport("alias", Aliased())
    name = unique_memory_address().removeprefix("memory://")
    async with listen(f"alias:{name}", make_config(2), _idle):
        channel = await dial(f"alias:{name}", make_config(1))
        assert channel.remote_peer_id == 2
        await channel.aclose()
    assert calls == [f"alias:{name}"]
    with pytest.raises(TypeError):
        register_transport("broken", object())  # type: ignore[arg-type]
    with pytest.raises(AddressError):
        register_transport("Bad Scheme", transport)
