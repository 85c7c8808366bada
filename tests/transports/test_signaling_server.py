"""Signaling over real WebSockets: routing, anti-spoof, refusals and what closes a connection."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lazily_transports.webrtc.signaling import (
    MAX_PEER_ID,
    Answer,
    Error,
    ForwardedAnswer,
    ForwardedOffer,
    ForwardedRelay,
    Ice,
    Join,
    Leave,
    Offer,
    PeerJoined,
    PeerLeft,
    Permissions,
    Relay,
    RoomCore,
    SignalingClient,
    SignalingError,
    SignalingFrameError,
    SignalingServer,
    Welcome,
    decode_client_frame,
    decode_server_frame,
    dumps,
    encode_frame,
    loads,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed


@pytest.fixture
async def server() -> AsyncIterator[SignalingServer]:
    async with SignalingServer() as running:
        yield running


async def _raw(server: SignalingServer, room: str = "/r") -> ClientConnection:
    return await connect(server.url + room, compression=None)


async def _recv(ws: ClientConnection) -> dict[str, Any]:
    with anyio.fail_after(5):
        message = await ws.recv()
    frame: dict[str, Any] = json.loads(message)
    return frame


async def test_join_roster_forwarding_and_peer_left(server: SignalingServer) -> None:
    a = await SignalingClient.connect(server.url + "/r", 5)
    b = await SignalingClient.connect(server.url + "/r", 2, capabilities=["crdt"])
    c = await SignalingClient.connect(server.url + "/r", 9)
    assert (a.roster, b.roster, c.roster) == ((), (5,), (2, 5))
    assert await a.receive() == PeerJoined(2)
    assert await a.receive() == PeerJoined(9)
    await a.send(Offer(2, "SDP"))
    assert await b.receive() == PeerJoined(9)
    assert await b.receive() == ForwardedOffer(5, "SDP")
    await b.send(Answer(5, "ANS"))
    assert await a.receive() == ForwardedAnswer(2, "ANS")
    await c.send(Relay(5, {"any": ["json", 1, None]}))
    assert await a.receive() == ForwardedRelay(9, {"any": ["json", 1, None]})
    await b.aclose()
    assert await a.receive() == PeerLeft(2)
    assert await c.receive() == PeerLeft(2)
    await a.send(Ice(2, "candidate:x"))
    assert await a.receive() == Error("unknown_target", "peer 2 is not in this session")
    await a.aclose()
    await c.aclose()
    for _ in range(500):  # the server drops an empty room once its handlers finish
        if server.room("/r") is None:
            break
        await anyio.sleep(0.01)
    assert server.room("/r") is None


async def test_rooms_are_separate_paths(server: SignalingServer) -> None:
    a = await SignalingClient.connect(server.url + "/one", 1)
    b = await SignalingClient.connect(server.url + "/two", 1)
    assert a.roster == b.roster == ()
    await a.send(Offer(2, "x"))
    assert await a.receive() == Error("unknown_target", "peer 2 is not in this session")
    await a.aclose()
    await b.aclose()


async def test_spoofed_from_is_refused_and_the_connection_stays_open(
    server: SignalingServer,
) -> None:
    victim = await SignalingClient.connect(server.url + "/r", 1)
    ws = await _raw(server)
    await ws.send(dumps(Join(2)))
    assert (await _recv(ws))["type"] == "welcome"
    await ws.send(json.dumps({"type": "offer", "to": 1, "from": 1, "sdp": "SPOOF"}))
    error = await _recv(ws)
    assert error["type"] == "error" and error["code"] == "malformed_frame"
    assert "from" in error["message"]
    await ws.send(dumps(Offer(1, "REAL")))
    assert await victim.receive() == PeerJoined(2)
    assert await victim.receive() == ForwardedOffer(2, "REAL")
    await ws.close()
    await victim.aclose()


@pytest.mark.parametrize(
    ("message", "close_code"),
    [("{not json", 1007), (b"\x00binary", 1003), ("[1, NaN]", 1007), ('{"a":1,"a":2}', 1007),
     ("[" * 40 + "]" * 40, 1007), ('{"type": "join", "peer": 1' + "0" * 100 + "}", 1007)],
)
async def test_non_json_closes_the_connection_after_an_error(
    server: SignalingServer, message: str | bytes, close_code: int
) -> None:
    ws = await _raw(server)
    await ws.send(message)
    error = await _recv(ws)
    assert error["type"] == "error" and error["code"] == "malformed_frame"
    with pytest.raises(ConnectionClosed) as info, anyio.fail_after(5):
        await ws.recv()
    assert info.value.rcvd is not None and info.value.rcvd.code == close_code


@pytest.mark.parametrize(
    "wire",
    [
        {"type": "carrier-pigeon"},
        {"type": "join", "peer": MAX_PEER_ID + 1},
        {"type": "join", "peer": 1, "extra": True},
        {"type": "welcome", "peer": 1, "peers": []},
        [],
    ],
)
async def test_invalid_frames_get_an_error_and_the_connection_stays_usable(
    server: SignalingServer, wire: Any
) -> None:
    ws = await _raw(server)
    await ws.send(json.dumps(wire))
    assert (await _recv(ws))["code"] == "malformed_frame"
    await ws.send(dumps(Join(3)))
    assert await _recv(ws) == {"type": "welcome", "peer": 3, "peers": []}
    await ws.close()


async def test_refusals_before_join_and_for_taken_ids(server: SignalingServer) -> None:
    ws = await _raw(server)
    await ws.send(dumps(Offer(1, "x")))
    assert (await _recv(ws))["code"] == "not_joined"
    holder = await SignalingClient.connect(server.url + "/r", 1)
    with pytest.raises(SignalingError) as info:
        await SignalingClient.connect(server.url + "/r", 1)
    assert info.value.code == "peer_taken"
    await ws.send(dumps(Join(4)))
    assert (await _recv(ws))["type"] == "welcome"
    await ws.send(dumps(Join(5)))
    assert await _recv(ws) == {
        "type": "error",
        "code": "already_joined",
        "message": "already joined as peer 4",
    }
    await ws.send(dumps(Leave()))
    await ws.send(dumps(Join(5)))
    assert await _recv(ws) == {"type": "welcome", "peer": 5, "peers": [1]}
    await ws.close()
    await holder.aclose()


async def test_allowlist_room_over_websocket() -> None:
    policy = Permissions.allowlist({1: [2]})
    async with SignalingServer(permissions=lambda path: policy) as server:
        one = await SignalingClient.connect(server.url + "/r", 1)
        two = await SignalingClient.connect(server.url + "/r", 2)
        three = await SignalingClient.connect(server.url + "/r", 3)
        await three.send(Offer(1, "x"))
        assert await three.receive() == Error(
            "permission_denied", "peer 3 is not allowed to signal peer 1"
        )
        await two.send(Offer(1, "y"))  # symmetric allowlist: 2 -> 1 is allowed
        assert await one.receive() == PeerJoined(2)
        assert await one.receive() == PeerJoined(3)
        assert await one.receive() == ForwardedOffer(2, "y")
        for client in (one, two, three):
            await client.aclose()


async def test_oversized_message_closes_with_1009() -> None:
    async with SignalingServer(max_frame_size=1024) as server:
        ws = await _raw(server)
        await ws.send(dumps(Join(1)))
        await _recv(ws)
        await ws.send(dumps(Relay(2, "x" * 4096)))
        with pytest.raises(ConnectionClosed) as info, anyio.fail_after(5):
            await ws.recv()
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009


async def test_client_rejects_a_bad_server_frame_and_closes() -> None:
    async def fake(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome", "peer": 1, "peers": []}))
        await ws.send(json.dumps({"type": "offer", "to": 2, "sdp": "server frames carry from"}))
        await ws.wait_closed()

    async with serve(fake, "127.0.0.1", 0) as fake_server:
        port = next(iter(fake_server.sockets)).getsockname()[1]
        client = await SignalingClient.connect(f"ws://127.0.0.1:{port}/r", 1)
        with pytest.raises(SignalingFrameError):
            await client.receive()
        with pytest.raises(anyio.EndOfStream):
            await client.receive()


async def test_client_refuses_a_welcome_for_another_peer() -> None:
    async def fake(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome", "peer": 2, "peers": []}))
        await ws.wait_closed()

    async with serve(fake, "127.0.0.1", 0) as fake_server:
        port = next(iter(fake_server.sockets)).getsockname()[1]
        with pytest.raises(SignalingFrameError, match="welcome for peer 1"):
            await SignalingClient.connect(f"ws://127.0.0.1:{port}/r", 1)


async def test_unreachable_server_and_bad_url() -> None:
    with pytest.raises(ConnectionError):
        await SignalingClient.connect("ws://127.0.0.1:1/r", 1, timeout=2)
    with pytest.raises(ValueError, match="invalid signaling URL"):
        await SignalingClient.connect("http://127.0.0.1:1/r", 1)


def test_room_disconnect_and_permissions_validation() -> None:
    room: RoomCore[str] = RoomCore()
    room.feed("a", Join(1))
    room.feed("b", Join(2))
    assert room.disconnect("b") == [("a", PeerLeft(2))]
    assert room.disconnect("b") == []
    assert room.peers == (1,)
    with pytest.raises(ValueError, match="'open' or 'allowlist'"):
        Permissions("closed")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no allowlist"):
        Permissions("open", {1: frozenset({2})})
    assert Permissions.allowlist({1: [2]}, symmetric=False).may_signal(2, 1) is False


def test_typed_frames_validate_on_construction() -> None:
    with pytest.raises(SignalingFrameError):
        Welcome(1, (3, 2))
    with pytest.raises(SignalingFrameError):
        Offer(True, "x")  # a bool is not a peer id
    with pytest.raises(SignalingFrameError):
        Relay(1, {1, 2})  # a set is not JSON
    with pytest.raises(SignalingFrameError):
        Error("", "empty code")
    with pytest.raises(TypeError):
        encode_frame("join")  # type: ignore[arg-type]
    with pytest.raises(SignalingFrameError, match="nest deeper than 32 levels"):
        loads("[" * 100_000)


_peers = st.integers(0, MAX_PEER_ID)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_client_frames = st.one_of(
    st.builds(Join, _peers, st.none() | st.lists(st.text(max_size=6)).map(tuple)),
    st.builds(Offer, _peers, st.text()),
    st.builds(Answer, _peers, st.text()),
    st.builds(Ice, _peers, st.text()),
    st.builds(Relay, _peers, _json),
    st.just(Leave()),
)


@given(_client_frames)
def test_client_frames_round_trip_through_json(frame: Any) -> None:
    assert decode_client_frame(loads(dumps(frame))) == frame


@given(_peers, st.lists(_peers, unique=True, max_size=6))
def test_welcome_round_trips_and_server_decoder_refuses_client_frames(
    peer: int, roster: list[int]
) -> None:
    roster = sorted(set(roster) - {peer})
    welcome = Welcome(peer, tuple(roster))
    assert decode_server_frame(loads(dumps(welcome))) == welcome
    with pytest.raises(SignalingFrameError):
        decode_server_frame(encode_frame(Join(peer)))


async def test_command_line_server() -> None:
    import asyncio
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lazily_transports.webrtc.signaling",
        "--port",
        "0",
        "--allow",
        "1:2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        with anyio.fail_after(20):
            line = (await process.stdout.readline()).decode()
        assert line.startswith("signaling on ws://127.0.0.1:") and "(allowlist)" in line
        url = line.split()[2]
        one = await SignalingClient.connect(url + "/r", 1)
        three = await SignalingClient.connect(url + "/r", 3)
        await three.send(Offer(1, "x"))
        refusal = await three.receive()
        assert isinstance(refusal, Error) and refusal.code == "permission_denied"
        await one.aclose()
        await three.aclose()
    finally:
        process.terminate()
        await process.wait()


async def _drain(client: SignalingClient) -> bool:
    """Read what ``client`` has queued until nothing comes for a second; False when the
    server closed its connection meanwhile."""
    while True:
        with anyio.move_on_after(1) as idle:
            try:
                await client.receive()
            except anyio.EndOfStream:
                return False
        if idle.cancel_called:
            return True


async def _flood(flooder: SignalingClient, target: int) -> Any:
    """Send ``target`` 100 relays of 200 KiB; the first frame the flooder gets back."""
    for _ in range(100):
        await flooder.send(Relay(target, {"x": "a" * (200 * 1024)}))
    with anyio.fail_after(10):
        return await flooder.receive()


async def test_a_peer_flooding_another_cannot_get_it_closed() -> None:
    async with SignalingServer(outbound_queue=4) as server:
        victim = await SignalingClient.connect(server.url + "/r", 1)  # reads only later
        flooder = await SignalingClient.connect(server.url + "/r", 2)
        assert await _flood(flooder, 1) == Error(
            "target_busy", "peer 1 is not taking frames as fast as they come; this one was "
            "dropped")
        assert await _drain(victim)  # what was queued for it; it stays joined
        room = server.room("/r")
        assert room is not None and room.peers == (1, 2)
        await flooder.send(Relay(1, {"after": 1}))
        with anyio.fail_after(5):
            assert await victim.receive() == ForwardedRelay(2, {"after": 1})
        await victim.aclose()
        await _drain(flooder)
        await flooder.aclose()


async def test_a_queue_is_bounded_in_bytes_too() -> None:
    async with SignalingServer(outbound_bytes=1 << 20) as server:
        victim = await SignalingClient.connect(server.url + "/r", 1)  # reads only later
        flooder = await SignalingClient.connect(server.url + "/r", 2)
        frame = await _flood(flooder, 1)
        assert isinstance(frame, Error) and frame.code == "target_busy"
        assert await _drain(victim)
        await victim.aclose()
        await _drain(flooder)
        await flooder.aclose()


async def test_a_flooded_peer_answering_a_peer_that_does_not_read_stays_joined() -> None:
    async with SignalingServer(outbound_queue=8) as server:
        victim = await SignalingClient.connect(server.url + "/r", 1)  # reads only later
        flooder = await SignalingClient.connect(server.url + "/r", 2)  # reads only at the end
        for _ in range(50):
            await flooder.send(Relay(1, {"x": "a" * (200 * 1024)}))
            await victim.send(Relay(2, {"refused": "a" * (200 * 1024)}))
        newcomer = await SignalingClient.connect(server.url + "/r", 3)
        seen: list[Any] = []
        while True:
            with anyio.move_on_after(1) as idle:
                try:
                    seen.append(await victim.receive())
                except anyio.EndOfStream:
                    break
            if idle.cancel_called:
                break
        assert PeerJoined(3) in seen
        room = server.room("/r")
        assert room is not None and room.peers == (1, 2, 3)
        await newcomer.aclose()
        await victim.aclose()
        await _drain(flooder)
        await flooder.aclose()
