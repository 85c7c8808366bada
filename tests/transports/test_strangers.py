"""Unauthenticated connections: handshake-sized limits, the ready step and admission caps."""

from __future__ import annotations

import asyncio
import base64
import gc
import logging
import os
import re
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from lazily_transports import (
    DEFAULT_SCHEMES,
    HANDSHAKE_FRAME_LIMIT,
    READY_FEATURE,
    DataChannel,
    Handshake,
    Hello,
    LinkAttribute,
    LinkBrokenError,
    LinkConfig,
    LinkStream,
    Listener,
    Mesh,
    PeerRejectedError,
    dial,
    listen,
    source_of,
)
from lazily_transports._core._buffered import BufferedChannel
from lazily_transports._core._digest import RefusalDigest
from lazily_transports._core._handshake import decode_message
from transport_helpers import (
    address_for,
    channel_pair,
    eventually,
    make_config,
    unique_memory_address,
)
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

pytestmark = pytest.mark.timeout(30)

BIG = 16 * 1024 * 1024
#: The acceptor waits this long for a handshake: only a limit can close a link sooner.
PATIENT = {"handshake_timeout": 30.0}


@asynccontextmanager
async def serving(address: str, config: LinkConfig | None = None) -> AsyncIterator[Listener]:
    """A listener whose handler records nothing and holds each link open."""

    async def handler(channel: LinkStream) -> None:
        await channel.receive()

    async with listen(address, config or make_config(2, **PATIENT), handler) as listener:
        yield listener


def host_port(address: str) -> tuple[str, int]:
    host, port = address.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return host, int(port)


async def raw_socket(address: str, source: str | None = None) -> socket.socket:
    """A plain connected socket to a unix:, tcp: or ws: listener, optionally from ``source``."""
    loop = asyncio.get_running_loop()
    if address.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target: object = address[len("unix://") :]
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if source is not None:
            sock.bind((source, 0))
        target = host_port(address)
    sock.setblocking(False)
    await loop.sock_connect(sock, target)
    return sock


async def closed_by_peer(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Read until the peer closes ``sock``; returns what it sent."""
    loop = asyncio.get_running_loop()
    received = b""
    with anyio.fail_after(timeout):
        while True:
            try:
                chunk = await loop.sock_recv(sock, 65536)
            except ConnectionResetError:
                return received
            if not chunk:
                return received
            received += chunk


async def still_open(sock: socket.socket, wait: float = 0.3) -> bool:
    """True when the peer has not closed ``sock`` within ``wait`` seconds."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(wait):
            while True:
                chunk = await loop.sock_recv(sock, 65536)
                if not chunk:
                    return False
    except TimeoutError:
        return True
    except ConnectionResetError:
        return False


# -- limits before authentication ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["unix", "tcp"])
async def test_a_stranger_announcing_a_big_frame_is_dropped_from_its_header(
    kind: str, short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with serving(address_for(kind, short_tmp)) as listener:
        sock = await raw_socket(listener.address)
        await asyncio.get_running_loop().sock_sendall(sock, BIG.to_bytes(4, "big") + b"\0" * 100)
        await closed_by_peer(sock)  # at once, not after the 30 s handshake timeout
        sock.close()
    assert any(f"maximum frame size of {HANDSHAKE_FRAME_LIMIT} bytes" in r.getMessage()
               for r in caplog.records)


async def test_a_websocket_stranger_cannot_send_a_big_message(short_tmp: Path) -> None:
    async with serving(address_for("ws", short_tmp)) as listener:
        async with ws_connect(listener.address, max_size=None, compression=None) as ws:
            await ws.recv()  # the listener's hello
            await ws.send(b"\0" * (HANDSHAKE_FRAME_LIMIT + 1))
            with anyio.fail_after(5), pytest.raises(ConnectionClosed) as info:
                await ws.recv()
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009  # message too big


async def test_a_memory_stranger_cannot_send_a_big_frame() -> None:
    async with serving(unique_memory_address()) as listener:
        raw = await DEFAULT_SCHEMES.transport("memory").connect(listener.address, make_config(1))
        Hello.decode(await raw.receive())
        raw.max_frame_size = BIG  # bypass our own ceiling, as an attacker would
        with pytest.raises(LinkBrokenError, match="maximum frame size"):
            await raw.send(b"\0" * (HANDSHAKE_FRAME_LIMIT + 1))
        await raw.aclose()


async def test_reading_pauses_after_about_one_handshake_frame(short_tmp: Path) -> None:
    transport = DEFAULT_SCHEMES.transport("unix")
    accepted: asyncio.Queue[DataChannel] = asyncio.Queue()
    address = address_for("unix", short_tmp)
    listener = await transport.listen(address, make_config(2), accepted.put_nowait)
    try:
        client = await transport.connect(address, make_config(1))
        server = await accepted.get()
        assert isinstance(server, BufferedChannel)
        frame = b"\0" * 60_000
        sent = 0
        with anyio.move_on_after(1):  # until the socket buffers are full too
            while sent < 40:
                await client.send(frame)
                sent += 1
        await eventually(lambda: server._rx_paused)
        queued = server._rx_added - server._rx_taken
        assert queued < HANDSHAKE_FRAME_LIMIT + 300_000  # one frame plus one socket read
        assert sent < 40  # the sender was held up
        server.open_limits(HANDSHAKE_FRAME_LIMIT, 1024 * 1024)  # as after authentication
        with anyio.fail_after(5):
            for _ in range(sent):
                assert await server.receive() == frame
        await client.aclose()
        await server.aclose()
    finally:
        await listener.aclose()


# -- the ready step ------------------------------------------------------------------------


async def test_a_big_frame_sent_right_after_establish_arrives(address: str) -> None:
    async with channel_pair(address) as (client, server):
        assert client.extra(LinkAttribute.max_frame_size) == BIG
        assert server.extra(LinkAttribute.max_frame_size) == BIG
        big = b"x" * (4 * 1024 * 1024)
        sending = asyncio.create_task(client.send(big))
        with anyio.fail_after(10):
            assert await server.receive() == big
            await sending
            await server.send(big)
            assert await client.receive() == big


async def test_a_peer_without_the_ready_step_is_refused_naming_it() -> None:
    async with serving(unique_memory_address()) as listener:
        raw = await DEFAULT_SCHEMES.transport("memory").connect(listener.address, make_config(1))
        old = Handshake(peer_id=1, session_id="test-cluster", max_frame_size=BIG,
                        features=frozenset({"raft-queue-v1"}))
        await raw.send(Hello(old, b"n" * 32, "hmac-sha256").encode())
        Hello.decode(await raw.receive())
        with pytest.raises(PeerRejectedError, match=READY_FEATURE) as info:
            decode_message(await raw.receive())
        assert info.value.field == "features"
        await raw.aclose()


# -- admission caps ------------------------------------------------------------------------


def test_a_connections_source_is_its_peers_address_or_unknown() -> None:
    """Every listener counts a connection under one spelling of its source."""
    assert source_of(asyncio.BaseTransport({"peername": ("127.0.0.2", 5000)})) == "127.0.0.2"
    assert source_of(asyncio.BaseTransport({"peername": ("::1", 5000, 0, 0)})) == "::1"
    for peer in ("", None):  # a Unix socket's peer has no address
        assert source_of(asyncio.BaseTransport({"peername": peer})) == "unknown"


async def test_per_source_cap_on_a_unix_listener(
    short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    config = make_config(2, max_pending_per_source=2, **PATIENT)
    async with serving(address_for("unix", short_tmp), config) as listener:
        held = [await raw_socket(listener.address) for _ in range(2)]
        for sock in held:
            assert await still_open(sock)
        over = [await raw_socket(listener.address) for _ in range(5)]
        for sock in over:
            await closed_by_peer(sock)  # at once, not after the handshake timeout
            sock.close()
        admission = listener.admission
        assert admission is not None
        assert (admission.pending, admission.refused) == (2, 5)
        if hasattr(socket, "SO_PEERCRED"):  # its source is this user, not the listener
            me = f"{listener.address}#peer (uid {os.getuid()})"
            assert admission.pending_from(me) == 2
        cap_lines = [r for r in caplog.records if "closing a connection" in r.getMessage()]
        assert len(cap_lines) == 1  # rate-limited
        for sock in held:
            sock.close()
        await eventually(lambda: not admission.pending)

        channel = await dial(listener.address, make_config(1))  # a member still gets in
        await channel.aclose()


def _connected_as(uid: int, path: str, count: int) -> list[socket.socket]:
    """``count`` sockets connected to the Unix socket ``path`` by a child process running
    as user ``uid``, handed back here (a socket's peer credentials are its connector's)."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the child: connect as ``uid``, send the sockets back, exit
        try:
            os.setgid(uid)
            os.setuid(uid)
            made = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(count)]
            for sock in made:
                sock.connect(path)
            socket.send_fds(theirs, [b"x"], [sock.fileno() for sock in made])
        finally:
            os._exit(0)
    theirs.close()
    with ours:
        _, fds, _, _ = socket.recv_fds(ours, 1, count)
    os.waitpid(pid, 0)
    assert len(fds) == count, "the child could not connect as the other user"
    return [socket.socket(fileno=fd) for fd in fds]


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED") or os.getuid() != 0,
                    reason="needs SO_PEERCRED and root (to connect as another user)")
async def test_another_users_pending_handshakes_leave_a_unix_listener_open_to_ours(
    short_tmp: Path,
) -> None:
    """A process of another user that may connect (a client's, on a socket its group can
    write) holding every pending slot it has does not keep members out."""
    config = make_config(2, max_pending_per_source=2, **PATIENT)
    async with serving(address_for("unix", short_tmp), config) as listener:
        path = listener.address[len("unix://"):]
        os.chmod(short_tmp, 0o755)
        os.chmod(path, 0o777)
        held = _connected_as(65534, path, 2)
        for sock in held:
            sock.setblocking(False)
            assert await still_open(sock)
        admission = listener.admission
        assert admission is not None and admission.pending == 2
        channel = await dial(listener.address, make_config(1))  # a member still gets in
        await channel.aclose()
        assert admission.refused == 0
        for sock in held:
            sock.close()


async def test_total_cap_counts_every_source(short_tmp: Path) -> None:
    config = make_config(2, max_pending_handshakes=2, **PATIENT)
    async with serving("tcp://127.0.0.1:0", config) as listener:
        first = await raw_socket(listener.address, "127.0.0.1")
        second = await raw_socket(listener.address, "127.0.0.2")
        assert await still_open(first) and await still_open(second)
        third = await raw_socket(listener.address, "127.0.0.3")
        await closed_by_peer(third)
        admission = listener.admission
        assert admission is not None and admission.refused == 1
        assert admission.pending_from("127.0.0.2") == 1
        for sock in (first, second, third):
            sock.close()


@pytest.mark.parametrize("kind", ["tcp", "ws"])
async def test_strangers_holding_every_slot_make_room_for_a_member(
    kind: str, short_tmp: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """All pending slots held from a few addresses (in their handshake, or before their
    WebSocket upgrade): a member dialing from another one takes the place of the busiest
    address's oldest, and links; that address cannot take it back, nor can one holding
    as many as the busiest less one."""
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    config = make_config(2, max_pending_handshakes=4, max_pending_per_source=3, **PATIENT)
    async with serving(address_for(kind, short_tmp), config) as listener:
        gate = listener.admission if kind == "tcp" else getattr(listener, "upgrades", None)
        assert gate is not None
        busy = [await raw_socket(listener.address, "127.0.0.2") for _ in range(3)]
        other = await raw_socket(listener.address, "127.0.0.3")
        for sock in (*busy, other):
            assert await still_open(sock)
        channel = await dial(listener.address, make_config(1))  # from 127.0.0.1
        await channel.aclose()
        await closed_by_peer(busy[0])  # the oldest of the busiest address made room
        assert gate.evicted == 1
        await eventually(lambda: gate.pending == 3)
        assert gate.pending_from("127.0.0.2") == 2
        refill = await raw_socket(listener.address, "127.0.0.4")  # room again: admitted
        assert await still_open(refill)
        again = await raw_socket(listener.address, "127.0.0.2")  # full: holds 2, not < 1
        await closed_by_peer(again)
        assert gate.evicted == 1 and gate.pending == 4
        assert any("closed the oldest connection from 127.0.0.2" in r.getMessage()
                   for r in caplog.records)
        for sock in (*busy, other, refill, again):
            sock.close()
        await eventually(lambda: not gate.pending)
        gc.collect()  # a task that ended on an exception nobody took logs it when collected
        assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]


@pytest.mark.parametrize("kind", ["tcp", "ws"])
async def test_a_mesh_counts_the_connections_closed_to_make_room(
    kind: str, short_tmp: Path,
) -> None:
    """The mesh's listener figures (a member's ``listener`` in ``/status.json``) count
    the connections closed in their handshake (or WebSocket upgrade) for another
    source's apart from those refused over the caps."""
    config = make_config(2, max_pending_handshakes=4, max_pending_per_source=3, **PATIENT)
    async with Mesh(config, address_for(kind, short_tmp), {1: "memory://unused"}) as mesh:
        address = mesh.listen_address
        assert address is not None
        held = [await raw_socket(address, "127.0.0.2") for _ in range(3)]
        held.append(await raw_socket(address, "127.0.0.3"))
        for sock in held:
            assert await still_open(sock)
        held.append(await raw_socket(address, "127.0.0.4"))  # full: takes 127.0.0.2's oldest
        await closed_by_peer(held[0])
        stats = mesh.listener_stats()
        assert (stats["evicted_connections"], stats["refused_connections"]) == (1, 0)
        assert stats["pending_handshakes"] == 4
        for sock in held:
            sock.close()


async def test_websocket_upgrades_are_capped_per_source(short_tmp: Path) -> None:
    config = make_config(2, max_pending_per_source=2, **PATIENT)
    async with serving(address_for("ws", short_tmp), config) as listener:
        held = [await raw_socket(listener.address) for _ in range(2)]  # no HTTP request yet
        for sock in held:
            assert await still_open(sock)
        over = await raw_socket(listener.address)
        await closed_by_peer(over)
        upgrades = getattr(listener, "upgrades", None)
        assert upgrades is not None and upgrades.refused == 1
        for sock in (*held, over):
            sock.close()


async def test_refused_handshakes_are_logged_without_flooding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with serving(unique_memory_address()) as listener:
        for _ in range(30):
            memory = DEFAULT_SCHEMES.transport("memory")
            raw = await memory.connect(listener.address, make_config(1))
            await raw.send(b"\xff" * 8)
            with anyio.fail_after(5), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                while True:  # the hello, the refusal, then the end
                    await raw.receive()
            await raw.aclose()
    refused = [r for r in caplog.records if r.getMessage().startswith("handshake with")]
    assert 1 <= len(refused) <= 10


async def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a TCP reset, as a stranger dropping its connection does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize("kind", ["tcp", "ws"])
async def test_strangers_connections_do_not_fill_the_log(
    kind: str, short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    loop = asyncio.get_running_loop()
    async with serving(address_for(kind, short_tmp)) as listener:
        for _ in range(40):
            sock = await raw_socket(listener.address)
            if kind == "ws":
                key = base64.b64encode(b"0123456789abcdef")
                await loop.sock_sendall(sock, b"GET /link HTTP/1.1\r\nHost: x\r\nUpgrade: "
                                        b"websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                                        + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
                assert (await loop.sock_recv(sock, 4096)).startswith(b"HTTP/1.1 101")
            await loop.sock_sendall(sock, b"\x00\x00")  # half a frame header, then gone
            await _reset(sock)
        admission = listener.admission
        assert admission is not None
        await eventually(lambda: not admission.pending)
    lines = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) <= 12, [r.getMessage() for r in lines[:20]]


async def test_a_refused_tcp_handshake_names_the_dialers_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with serving("tcp://127.0.0.1:0") as listener:
        sock = await raw_socket(listener.address)
        port = sock.getsockname()[1]
        await asyncio.get_running_loop().sock_sendall(sock, b"\x00\x00\x00\x03bad")
        await closed_by_peer(sock)
        sock.close()
    refused = [r.getMessage() for r in caplog.records
               if r.getMessage().startswith("handshake with")]
    assert refused and refused[0].startswith(f"handshake with tcp://127.0.0.1:{port} refused")


async def test_handshakes_not_completed_in_time_are_summarised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Idle connections (slow-loris) each time out: the first few are logged one by one,
    the rest in one line with their count and the latest peer, not one line each."""
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    config = make_config(2, handshake_timeout=0.2, max_pending_per_source=100)
    async with serving("tcp://127.0.0.1:0", config) as listener:
        idle = [await raw_socket(listener.address) for _ in range(40)]
        admission = listener.admission
        assert admission is not None
        await eventually(lambda: admission.refused_handshakes == 40)
        for sock in idle:
            sock.close()
    lines = [r.getMessage() for r in caplog.records if "handshake" in r.getMessage()]
    assert len(lines) == 4, lines
    assert all(" refused: " in line and "not completed within 0.2 s" in line
               for line in lines[:3])
    assert re.fullmatch(r"37 more handshakes refused \(one line per 10 s\), the latest with "
                        r"tcp://127\.0\.0\.1:\d+: .*not completed within 0\.2 s", lines[3])


async def test_a_refusal_digest_logs_one_line_per_interval_and_again_after_a_quiet_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="digest")
    now = [0.0]
    digest = RefusalDigest(logging.getLogger("digest"), first=2, interval=10,
                           clock=lambda: now[0])
    for i in range(600):
        digest.add(f"peer{i}", "timeout")
    digest.flush()
    for i in range(5):
        digest.add(f"late{i}", "timeout")  # the flood goes on: counted
    digest.flush()
    now[0] = 30.0  # a quiet interval: the next ones are shown again
    digest.add("again", "timeout")
    digest.flush()
    assert [r.getMessage() for r in caplog.records] == [
        "handshake with peer0 refused: timeout", "handshake with peer1 refused: timeout",
        "598 more handshakes refused (one line per 10 s), the latest with peer599: timeout",
        "5 more handshakes refused (one line per 10 s), the latest with late4: timeout",
        "handshake with again refused: timeout"]
