"""WebRTC links between real aiortc peers on 127.0.0.1, brokered by a real signaling server."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from lazily_transports import (
    AddressError,
    HandshakeError,
    LinkAttribute,
    LinkBrokenError,
    LinkConfig,
    LinkStream,
    dial,
    listen,
)
from lazily_transports.webrtc import (
    MESSAGE_SIZE,
    IceSettings,
    WebRTCChannel,
    parse_webrtc_address,
)
from lazily_transports.webrtc.ice import install_gatherer, new_peer_connection
from lazily_transports.webrtc.signaling import (
    ForwardedOffer,
    ForwardedRelay,
    Offer,
    PeerJoined,
    PeerLeft,
    Relay,
    SignalingClient,
    SignalingServer,
)

SECRET = b"webrtc-test-cluster-secret"


def config(peer_id: int, **overrides: Any) -> LinkConfig:
    values: dict[str, Any] = {
        "peer_id": peer_id,
        "session_id": "webrtc-test",
        "secret": SECRET,
        "handshake_timeout": 5.0,
    }
    values.update(overrides)
    return LinkConfig(**values)


@pytest.fixture
async def server() -> AsyncIterator[SignalingServer]:
    async with SignalingServer() as running:
        yield running


@pytest.fixture
def room(server: SignalingServer) -> str:
    return f"webrtc://127.0.0.1:{server.port}/room"


@asynccontextmanager
async def pair(
    room: str, dialer: LinkConfig, acceptor: LinkConfig
) -> AsyncIterator[tuple[LinkStream, LinkStream]]:
    accepted: asyncio.Queue[LinkStream] = asyncio.Queue()
    release = asyncio.Event()

    async def handler(channel: LinkStream) -> None:
        await accepted.put(channel)
        await release.wait()

    async with listen(room, acceptor, handler) as listener:
        client = await dial(listener.address, dialer, timeout=10)
        with anyio.fail_after(10):
            server = await accepted.get()
        try:
            yield client, server
        finally:
            release.set()
            await client.aclose()


async def _receive(channel: LinkStream) -> bytes:
    with anyio.fail_after(10):
        return await channel.receive()


# -- addresses and ICE settings --------------------------------------------------------


def test_address_forms() -> None:
    parsed = parse_webrtc_address("webrtc://127.0.0.1:9000/room?peer=4")
    assert (parsed.signaling_url, parsed.peer, parsed.ice_hosts) == (
        "ws://127.0.0.1:9000/room",
        4,
        None,
    )
    parsed = parse_webrtc_address("webrtc+wss://[::1]:443?ice_host=::1,10.0.0.5&ice_host=fd00::5")
    assert parsed.signaling_url == "wss://[::1]:443/"
    assert parsed.ice_hosts == ("::1", "10.0.0.5", "fd00::5")
    assert parse_webrtc_address("webrtc+ws://h:1/a/b").signaling_url == "ws://h:1/a/b"


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("tcp://127.0.0.1:1", "expected webrtc"),
        ("webrtc://127.0.0.1/room", "host:port"),
        ("webrtc://127.0.0.1:99999/room", "invalid WebRTC address"),
        ("webrtc://127.0.0.1:1/room?peer=-1", "peer must be an integer"),
        ("webrtc://127.0.0.1:1/room?peer=9007199254740992", "peer must be an integer"),
        ("webrtc://127.0.0.1:1/room?peer=1&peer=2", "unexpected or repeated"),
        ("webrtc://127.0.0.1:1/room?stun=x", "unexpected or repeated"),
        ("webrtc://127.0.0.1:1/room?ice_host=eth0", "ice_host must be an IP"),
        ("webrtc://127.0.0.1:1/room#frag", "no fragment"),
        ("webrtc://u:p@127.0.0.1:1/room", "no fragment or credentials"),
    ],
)
def test_bad_addresses_are_refused(address: str, message: str) -> None:
    with pytest.raises(AddressError, match=message):
        parse_webrtc_address(address)


def test_ice_settings_validation() -> None:
    with pytest.raises(ValueError, match="IP literal"):
        IceSettings(host_addresses=("localhost",))
    with pytest.raises(TypeError):
        IceSettings(host_addresses="127.0.0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must not be empty"):
        IceSettings(host_addresses=())
    with pytest.raises(ValueError, match=">= 0"):
        IceSettings(receive_buffer=-1)


async def test_gathering_uses_only_the_configured_hosts_and_no_ice_server() -> None:
    settings = IceSettings(host_addresses=("127.0.0.1",))
    pc = new_peer_connection(settings)
    try:
        pc.createDataChannel("probe")
        install_gatherer(pc, settings)
        await pc.setLocalDescription(await pc.createOffer())
        connection = pc.sctp.transport.transport.iceGatherer._connection
        assert connection.stun_server is None and connection.turn_server is None
        candidates = [line for line in pc.localDescription.sdp.splitlines() if "candidate:" in line]
        assert candidates and all(" 127.0.0.1 " in line for line in candidates), candidates
        assert all("typ host" in line for line in candidates)
        for protocol in connection._protocols:
            sock = protocol.transport.get_extra_info("socket")
            # aioice asks for 256 KiB (Linux reports twice the request).
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) > 2 * 256 * 1024
    finally:
        await pc.close()


# -- links -----------------------------------------------------------------------------


@pytest.mark.parametrize(("dialer_id", "acceptor_id"), [(1, 2), (2, 1)])
async def test_dial_and_listen_in_both_id_orders(
    room: str, dialer_id: int, acceptor_id: int
) -> None:
    async with pair(room, config(dialer_id), config(acceptor_id)) as (client, server):
        assert isinstance(client.channel, WebRTCChannel)
        assert isinstance(server.channel, WebRTCChannel)
        assert client.extra(LinkAttribute.peer_id) == acceptor_id
        assert server.extra(LinkAttribute.peer_id) == dialer_id
        assert client.extra(LinkAttribute.authenticated)
        assert server.extra(LinkAttribute.authenticated)
        await client.send(b"ping")
        assert await _receive(server) == b"ping"
        await server.send(b"pong")
        assert await _receive(client) == b"pong"


async def test_frames_stay_whole_and_ordered_across_message_boundaries(room: str) -> None:
    sizes = [0, 1, 100, MESSAGE_SIZE - 4, MESSAGE_SIZE, MESSAGE_SIZE + 1, 70_000, 1 << 20]
    frames = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
    frames += [i.to_bytes(4, "big") * 25 for i in range(2000)]
    async with pair(room, config(1), config(2)) as (client, server):

        async def send_all() -> None:
            for frame in frames:
                await client.send(frame)

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_all)
            received = [await _receive(server) for _ in frames]
        assert received == frames


async def test_small_frames_are_coalesced_into_bounded_messages(room: str) -> None:
    async with pair(room, config(1), config(2)) as (client, server):
        raw = client.channel
        assert isinstance(raw, WebRTCChannel)
        sent: list[int] = []
        dc_send = raw._dc.send

        def spy(data: bytes | str) -> None:
            sent.append(len(data))
            dc_send(data)

        raw._dc.send = spy  # type: ignore[method-assign]
        for i in range(1000):
            client.send_nowait(i.to_bytes(2, "big") * 50)
        for i in range(1000):
            assert await _receive(server) == i.to_bytes(2, "big") * 50
        assert 1 <= len(sent) <= 8 and max(sent) <= MESSAGE_SIZE
        assert sum(sent) == 1000 * (4 + 100)


async def test_send_eof_is_a_half_close(room: str) -> None:
    async with pair(room, config(1), config(2)) as (client, server):
        await client.send(b"last")
        await client.send_eof()
        with pytest.raises(anyio.ClosedResourceError):
            await client.send(b"after eof")
        assert await _receive(server) == b"last"
        with pytest.raises(anyio.EndOfStream):
            await _receive(server)
        await server.send(b"reply")
        assert await _receive(client) == b"reply"


async def test_close_flushes_sent_frames_before_the_peer_sees_the_end(room: str) -> None:
    async with pair(room, config(2), config(1)) as (client, server):
        for i in range(500):
            client.send_nowait(i.to_bytes(4, "big") * 64)
        await client.aclose()
        for i in range(500):
            assert await _receive(server) == i.to_bytes(4, "big") * 64
        with pytest.raises(anyio.EndOfStream):
            await _receive(server)
        with pytest.raises(LinkBrokenError):
            await server.send(b"to nobody")


@pytest.mark.parametrize(
    "poison",
    [
        struct.pack(">I", 1 << 20) + b"x",
        "not eof",
        struct.pack(">I", 10) + b"trunc",
        "ack 999999999",
        "window 0",
        "ack \u00b2",
    ],
    ids=["oversized-record", "text", "truncated", "ack-beyond-sent", "zero-window", "ack-unicode"],
)
async def test_a_bad_message_from_the_peer_breaks_only_that_link(
    room: str, poison: bytes | str
) -> None:
    acceptor = config(2, max_frame_size=64 * 1024)
    async with pair(room, config(1, max_frame_size=64 * 1024), acceptor) as (client, server):
        raw = client.channel
        assert isinstance(raw, WebRTCChannel)
        await client.send(b"fine")
        assert await _receive(server) == b"fine"
        raw._dc.send(poison)
        if isinstance(poison, bytes) and len(poison) < 20:
            raw._dc.send("eof")  # the stream ends inside the record
        with pytest.raises(LinkBrokenError):
            await _receive(server)
        with pytest.raises((anyio.EndOfStream, LinkBrokenError)):
            await _receive(client)
    async with pair(room, config(1), config(2)) as (client, server):
        await client.send(b"the process lives on")
        assert await _receive(server) == b"the process lives on"


async def test_wrong_secret_is_refused(room: str) -> None:
    handled: list[LinkStream] = []

    async def handler(channel: LinkStream) -> None:
        handled.append(channel)

    async with listen(room, config(1), handler) as listener:
        with pytest.raises(HandshakeError):
            await dial(listener.address, config(2, secret=b"not the cluster secret"), timeout=10)
        with pytest.raises(HandshakeError):
            await dial(listener.address, config(0, session_id="other"), timeout=10)
        ok = await dial(listener.address, config(2), timeout=10)
        await ok.aclose()
    assert [c.extra(LinkAttribute.peer_id) for c in handled] == [2]


# -- dialing failures ------------------------------------------------------------------


async def test_dialing_errors(room: str) -> None:
    with pytest.raises(ConnectionRefusedError, match="not in signaling room"):
        await dial(room + "?peer=5", config(1), timeout=5)
    with pytest.raises(AddressError, match="remote peer id"):
        await dial(room, config(1), timeout=5)
    with pytest.raises(AddressError, match="own peer id"):
        async with listen(room, config(3), _idle):
            await dial(room + "?peer=3", config(3), timeout=5)
    with pytest.raises(AddressError, match="at most 2"):
        await dial(room + "?peer=3", config(2**60), timeout=5)


async def _idle(channel: LinkStream) -> None:
    await anyio.sleep_forever()


async def test_listen_conflicts(server: SignalingServer, room: str) -> None:
    async with listen(room, config(4), _idle) as listener:
        assert listener.address == f"{room}?peer=4"
        with pytest.raises(OSError) as info:
            async with listen(room, config(4), _idle):
                pass
        assert info.value.errno == errno.EADDRINUSE
    with pytest.raises(AddressError, match="names peer 5"):
        async with listen(room + "?peer=5", config(4), _idle):
            pass
    squatter = await SignalingClient.connect(f"ws://127.0.0.1:{server.port}/room", 6)
    with pytest.raises(OSError) as info:
        async with listen(room, config(6), _idle):
            pass
    assert info.value.errno == errno.EADDRINUSE
    await squatter.aclose()


async def test_connect_timeout_when_the_peer_never_answers(
    server: SignalingServer, room: str
) -> None:
    mute = await SignalingClient.connect(f"ws://127.0.0.1:{server.port}/room", 50)
    with anyio.fail_after(5):
        with pytest.raises(TimeoutError):
            await dial(room + "?peer=50", config(1), timeout=0.5)  # we offer, nobody answers
        with pytest.raises(TimeoutError):
            await dial(room + "?peer=50", config(99), timeout=0.5)  # we ask, nobody offers
    await mute.aclose()


async def test_refusal_and_departure_fail_the_dial(server: SignalingServer, room: str) -> None:
    peer = await SignalingClient.connect(f"ws://127.0.0.1:{server.port}/room", 3)

    async def next_request() -> ForwardedRelay:
        while not isinstance(frame := await peer.receive(), ForwardedRelay):
            assert isinstance(frame, PeerJoined | PeerLeft)
        assert frame.payload["op"] == "connect"
        return frame

    async def refuse_then_leave() -> None:
        request = await next_request()
        reply = {**request.payload, "op": "refused", "reply_to": "connect", "reason": "nope"}
        await peer.send(Relay(request.from_, reply))
        await next_request()
        await peer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(refuse_then_leave)
        with pytest.raises(ConnectionRefusedError, match="nope"):
            await dial(room + "?peer=3", config(8), timeout=5)
        with pytest.raises(ConnectionRefusedError, match="left"):
            await dial(room + "?peer=3", config(8), timeout=5)


# -- two processes ---------------------------------------------------------------------

_CHILD = """
import asyncio, os, sys
from lazily_transports import LinkConfig, dial, listen

async def main(room: str) -> None:
    config = LinkConfig(peer_id=7, session_id="webrtc-test", secret=sys.argv[2].encode())
    served = asyncio.Event()

    async def echo_reversed(channel):
        async for frame in channel:
            await channel.send(frame[::-1])
        await channel.aclose()
        served.set()

    async with listen(room, config, echo_reversed):
        print("LISTENING", flush=True)
        channel = await dial(room + "?peer=1", config, timeout=10)
        for i in range(1000):
            await channel.send(i.to_bytes(4, "big") * 30)
        await channel.send_eof()
        reply = await channel.receive()
        assert reply == b"got 1000 in order", reply
        await channel.aclose()
        await asyncio.wait_for(served.wait(), 20)
    print("CHILD OK", flush=True)

if os.environ.get("LAZILY_TEST_LOOP") == "uvloop":
    import uvloop
    uvloop.run(main(sys.argv[1]))
else:
    asyncio.run(main(sys.argv[1]))
"""


async def test_two_processes_exchange_frames_both_ways(room: str) -> None:
    import sys

    received: list[bytes] = []

    async def collect(channel: LinkStream) -> None:
        async for frame in channel:
            received.append(frame)
        ok = received == [i.to_bytes(4, "big") * 30 for i in range(1000)]
        await channel.send(b"got 1000 in order" if ok else b"mismatch")

    async with listen(room, config(1), collect):
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _CHILD,
            room,
            SECRET.decode(),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert child.stdout is not None
            with anyio.fail_after(20):
                assert await child.stdout.readline() == b"LISTENING\n"
            channel = await dial(room + "?peer=7", config(1), timeout=10)
            assert channel.extra(LinkAttribute.peer_id) == 7
            frames = [bytes([i % 256]) * (i % 300) + b"!" for i in range(500)]
            for frame in frames:
                await channel.send(frame)
            await channel.send_eof()
            assert [await _receive(channel) for _ in frames] == [f[::-1] for f in frames]
            with pytest.raises(anyio.EndOfStream):
                await _receive(channel)
            await channel.aclose()
            with anyio.fail_after(20):
                out, _ = await child.communicate()
            assert child.returncode == 0 and out == b"CHILD OK\n", out
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
    assert len(received) == 1000


async def test_listener_rejoins_after_the_signaling_server_restarts() -> None:
    first = SignalingServer()
    await first.start()
    port = first.port
    room = f"webrtc://127.0.0.1:{port}/room"
    async with listen(room, config(2), _idle) as listener:
        await first.aclose()
        async with SignalingServer(port=port) as second:
            for _ in range(200):  # the listener retries with backoff
                live = second.room("/room")
                if live is not None and 2 in live.peers:
                    break
                await anyio.sleep(0.05)
            channel = await dial(listener.address, config(1), timeout=10)
            assert channel.extra(LinkAttribute.peer_id) == 2
            await channel.aclose()


async def test_a_mesh_of_three_nodes_over_webrtc(room: str) -> None:
    from lazily_transports import Frame, Mesh, PeerUp

    ids = (1, 2, 3)
    meshes = [
        Mesh(config(i), room, {j: f"{room}?peer={j}" for j in ids if j != i}, backoff_max=0.2)
        for i in ids
    ]
    async with meshes[0], meshes[1], meshes[2]:
        for mesh in meshes:
            ups: set[int] = set()
            with anyio.fail_after(20):
                while len(ups) < 2:
                    event = await mesh.events.receive()
                    if isinstance(event, PeerUp):
                        ups.add(event.peer_id)
        for i, mesh in zip(ids, meshes, strict=True):
            assert all(mesh.broadcast_nowait(f"from {i}".encode()).values())
        for i, mesh in zip(ids, meshes, strict=True):
            frames: set[bytes] = set()
            with anyio.fail_after(10):
                while len(frames) < 2:
                    event = await mesh.events.receive()
                    if isinstance(event, Frame):
                        frames.add(event.data)
            assert frames == {f"from {j}".encode() for j in ids if j != i}


class _SharedClose:
    """Closes like aiortc: later ``close()`` calls wait on the first call's future."""

    def __init__(self) -> None:
        self.closed: asyncio.Future[bool] | None = None
        self.release = asyncio.Event()

    async def close(self) -> None:
        if self.closed is not None:
            await self.closed
            return
        self.closed = asyncio.get_running_loop().create_future()
        await self.release.wait()
        self.closed.set_result(True)


async def test_a_cancelled_close_leaves_the_peer_connections_own_close_intact() -> None:
    from lazily_transports.webrtc.channel import close_peer_connection

    pc = _SharedClose()
    own = asyncio.create_task(pc.close())  # aiortc's close when DTLS ends
    await asyncio.sleep(0)
    ours = asyncio.create_task(close_peer_connection(pc))  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)
    ours.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ours
    pc.release.set()
    await own  # raised InvalidStateError when the cancelled waiter cancelled the future
    assert pc.closed is not None and pc.closed.result() is True


async def test_negotiations_a_stranger_starts_are_capped(
    server: SignalingServer, room: str
) -> None:
    from lazily_transports.webrtc.session import MAX_ANSWERING_PER_PEER

    async def handler(stream: LinkStream) -> None:
        await stream.aclose()

    async with listen(room + "?peer=1", config(1), handler):
        stranger = await SignalingClient.connect(f"ws://127.0.0.1:{server.port}/room", 77)
        asked = MAX_ANSWERING_PER_PEER + 12
        for n in range(asked):  # each asks peer 1 to offer it a link
            await stranger.send(Relay(1, {"lazily-webrtc": 1, "op": "connect", "token": f"t{n}"}))
        offers = busy = 0
        with anyio.fail_after(20):
            while offers + busy < asked:
                frame = await stranger.receive()
                if isinstance(frame, ForwardedOffer):
                    offers += 1
                elif isinstance(frame, ForwardedRelay) and frame.payload.get("op") == "refused":
                    assert str(frame.payload.get("reason")).startswith("busy: ")
                    busy += 1
        assert (offers, busy) == (MAX_ANSWERING_PER_PEER, 12)
        await stranger.aclose()


async def test_bad_offers_from_a_stranger_do_not_fill_the_log(
    server: SignalingServer, room: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(stream: LinkStream) -> None:
        await stream.aclose()

    caplog.set_level(logging.INFO, logger="lazily_transports")
    async with listen(room + "?peer=1", config(1), handler):
        stranger = await SignalingClient.connect(f"ws://127.0.0.1:{server.port}/room", 77)
        for _ in range(40):
            await stranger.send(Offer(1, "v=0\r\nnot an offer"))
            await stranger.send(Relay(1, {"lazily-webrtc": 1, "op": "dance"}))
        refused = 0
        with anyio.fail_after(20):
            while refused < 40:  # each offer is refused, in order
                frame = await stranger.receive()
                if isinstance(frame, ForwardedRelay) and frame.payload.get("op") == "refused":
                    refused += 1
        await stranger.aclose()
    lines = [r for r in caplog.records if r.name == "lazily_transports.webrtc"]
    assert 1 <= len(lines) <= 10, [r.getMessage()[:80] for r in lines]
