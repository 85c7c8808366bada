"""Scheme tables (injectable, lazy), address parsing, and listener binding rules."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from lazily_transports import (
    DEFAULT_SCHEMES,
    AddressError,
    ChannelAcceptor,
    DataChannel,
    Frame,
    HandshakeError,
    LinkAttribute,
    LinkConfig,
    LinkStream,
    Listener,
    Mesh,
    PeerUp,
    SchemeTable,
    Transport,
    dial,
    listen,
    probe,
    scheme_of,
)
from lazily_transports.sockets import parse_tcp, parse_unix
from lazily_transports.websocket import parse_websocket
from transport_helpers import make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)


async def _idle(channel: LinkStream) -> None:
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
    with pytest.raises(AddressError, match=r"no transport for scheme 'carrier'.*tcp"):
        await dial("carrier://pigeon", make_config(1))


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("unix://relative/path", "no host part"),
        ("unix:", "empty socket path"),
        ("unix:sockets/", "names a directory"),
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


async def test_a_unix_socket_in_a_missing_directory_names_it(short_tmp: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"directory {short_tmp}/none does not exist"):
        async with listen(f"unix://{short_tmp}/none/n.sock", make_config(2), _idle):
            pass


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
        with pytest.raises(HandshakeError, match="answered HTTP 404 'no link endpoint at "
                           "/other'"):  # a refusal no retry changes: a dial of another path
            await dial(wrong, make_config(1))


class Aliased(Transport):
    """A test double: ``alias:NAME`` addresses over the memory transport, recorded."""

    def __init__(self) -> None:
        self.memory = SchemeTable.builtin().transport("memory")
        self.calls: list[str] = []

    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        self.calls.append(address)
        return await self.memory.connect(address.replace("alias:", "memory://"), config)

    async def listen(
        self,
        address: str,
        config: LinkConfig,
        accept: ChannelAcceptor,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> Listener:
        return await self.memory.listen(address.replace("alias:", "memory://"), config, accept)


async def test_an_injected_table_routes_its_scheme_to_a_test_double() -> None:
    double = Aliased()
    table = SchemeTable.builtin().with_transport("alias", double)
    assert "alias" in table.schemes and "tcp" in table
    assert "alias" not in DEFAULT_SCHEMES  # nothing global changed
    name = unique_memory_address().removeprefix("memory://")
    async with listen(f"alias:{name}", make_config(2), _idle, schemes=table):
        stream = await dial(f"alias:{name}", make_config(1), schemes=table)
        assert stream.extra(LinkAttribute.peer_id) == 2
        await stream.aclose()
        with pytest.raises(AddressError, match="no transport for scheme 'alias'"):
            await dial(f"alias:{name}", make_config(1))
    assert double.calls == [f"alias:{name}"]


async def test_a_mesh_dials_and_listens_through_its_table() -> None:
    double = Aliased()
    table = SchemeTable({"alias": double})
    names = {i: unique_memory_address().removeprefix("memory://") for i in (1, 2)}
    addresses = {i: f"alias:{name}" for i, name in names.items()}
    one = Mesh(make_config(1), addresses[1], {2: addresses[2]}, schemes=table)
    two = Mesh(make_config(2), addresses[2], {1: addresses[1]}, schemes=table)
    async with one, two:
        with anyio.fail_after(10):
            while not isinstance(await one.events.receive(), PeerUp):
                pass
        assert one.send_nowait(2, b"through the double")
        with anyio.fail_after(10):
            while not isinstance(event := await two.events.receive(), Frame):
                pass
        assert event.data == b"through the double"
    assert addresses[2] in double.calls  # node 1 dialed node 2 through the double
    assert set(double.calls) <= set(addresses.values())
    with pytest.raises(AddressError, match="no transport for scheme 'tcp'"):
        Mesh(make_config(1), None, {2: "tcp://127.0.0.1:7002"}, schemes=table)


class Unanswered(Aliased):
    """A test double whose connections never complete."""

    async def connect(
        self, address: str, config: LinkConfig, *, ssl_context: ssl.SSLContext | None = None
    ) -> DataChannel:
        self.calls.append(address)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_dial_or_probe_whose_connection_does_not_complete_times_out_naming_it() -> None:
    double = Unanswered()
    table = SchemeTable({"alias": double})
    for connect in (dial, probe):
        with pytest.raises(TimeoutError,
                           match=r"^connecting to alias:x timed out after 0\.01 s$"):
            await connect("alias:x", make_config(1), timeout=0.01, schemes=table)
    assert double.calls == ["alias:x", "alias:x"]


def test_tables_refuse_bad_entries() -> None:
    with pytest.raises(TypeError, match="expected a Transport or a factory"):
        SchemeTable({"broken": object()})  # type: ignore[dict-item]
    with pytest.raises(AddressError, match="invalid scheme"):
        SchemeTable({"Bad Scheme": Aliased()})
    table = SchemeTable({"odd": lambda: object()})  # type: ignore[dict-item,return-value]
    with pytest.raises(TypeError, match="factory returned object"):
        table.transport("odd")


def test_a_factory_is_called_once_for_all_its_schemes_and_copies() -> None:
    made: list[Aliased] = []

    def factory() -> Transport:
        made.append(Aliased())
        return made[-1]

    table = SchemeTable({"a": factory, "b": factory})
    assert made == []  # nothing made before first use
    copy = table.with_transport("c", Aliased())
    assert table.transport("a") is table.transport("b") is copy.transport("b") is made[0]
    assert len(made) == 1


def test_importing_the_package_loads_no_transport() -> None:
    code = (
        "import sys, lazily_transports\n"
        "loaded = [m for m in ('websockets', 'aiortc', 'lazily_transports.websocket',"
        " 'lazily_transports.sockets', 'lazily_transports.memory') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
