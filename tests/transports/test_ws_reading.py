"""A ``ws://`` link reads no further once its receive queue is full (websockets' own
queue of messages holds none beyond it), and its connection follows the frames it reads
so a frame budget knows the size of the message still arriving."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from lazily_transports import FrameBudget
from lazily_transports._core._ws_frames import WsFrames
from transport_helpers import channel_pair, eventually, make_config

MB = 1_000_000


@asynccontextmanager
async def _budgeted_ws_link() -> AsyncIterator[tuple[FrameBudget, Any, Any]]:
    """A ws link whose server side counts in a 64 MB frame budget, and the client side's
    raw transport to write frames with (it reads nothing back, closes nothing)."""
    config = {"max_frame_size": 2 * MB}
    async with channel_pair("ws://127.0.0.1:0/link", make_config(1, **config),
                            make_config(2, **config)) as (client, server):
        budget = FrameBudget(64 * MB)
        assert server.channel.use_frame_budget(budget)
        transport = client.channel._ws.transport  # type: ignore[attr-defined]
        transport.pause_reading()
        yield budget, transport, server


async def _settled(read: object) -> int:
    """``read()`` once it stopped growing for half a second."""
    assert callable(read)
    last = -1
    while (now := read()) != last:
        last = now
        await asyncio.sleep(0.5)
    return int(now)


async def test_a_ws_link_not_read_holds_its_receive_queue_not_64_messages_more() -> None:
    config = {"max_frame_size": 2 * MB, "receive_buffer_size": MB}
    async with channel_pair("ws://127.0.0.1:0/link", make_config(1, **config),
                            make_config(2, **config)) as (client, server):

        async def pump() -> None:
            for _ in range(40):
                await client.send(b"x" * MB)

        task = asyncio.create_task(pump())
        try:
            held = await asyncio.wait_for(_settled(lambda: server.channel.received_bytes), 30)
            assert held < 8 * MB  # the queue (1 MB), a message more, what one read took
            for _ in range(40):  # reading resumes as the queue drains
                assert await asyncio.wait_for(server.receive(), 10) == b"x" * MB
            await task
        finally:
            task.cancel()


def _frame(payload: bytes, *, opcode: int = 2, fin: bool = True) -> bytes:
    head = bytes([(0x80 if fin else 0) | opcode])
    if len(payload) < 126:
        head += bytes([0x80 | len(payload)])
    elif len(payload) < 1 << 16:
        head += bytes([0x80 | 126]) + len(payload).to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + len(payload).to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


def _fed(*chunks: bytes) -> tuple[WsFrames, list[bool]]:
    frames = WsFrames()
    return frames, [frames.feed(chunk) for chunk in chunks]


def test_frames_are_followed_from_the_end_of_the_upgrade_headers_byte_by_byte() -> None:
    wire = b"HTTP/1.1 101 Switching\r\nUpgrade: websocket\r\n\r\n" + _frame(b"a" * 300)
    frames, ended = _fed(*(wire[i:i + 1] for i in range(len(wire))))
    assert ended[-1] and not any(ended[:-1])
    assert frames.expected(MB) is None


def test_the_size_of_a_frame_arriving_is_known_once_its_header_is_in() -> None:
    frame = _frame(b"b" * 70_000)
    frames, ended = _fed(b"GET / HTTP/1.1\r\n\r\n" + _frame(b"ping", opcode=9)
                         + frame[:5])
    assert ended == [True]  # the ping is whole
    assert frames.expected(MB) is None  # the next header not whole yet
    assert not frames.feed(frame[5:1000])
    assert frames.expected(MB) == len(frame)
    assert frames.expected(70_000) == len(frame)  # its payload is what the limit bounds
    assert frames.expected(69_999) is None  # above the limit: refused anyway
    assert frames.feed(frame[1000:]) and frames.expected(MB) is None


def test_a_message_in_fragments_is_expected_at_the_limit_until_its_last_fragment(
) -> None:
    frames, ended = _fed(b"GET / HTTP/1.1\r\n\r\n" + _frame(b"c" * 10, fin=False)
                         + _frame(b"pong", opcode=10) + _frame(b"c" * 10, opcode=0, fin=False))
    assert ended == [False] and frames.expected(MB) == MB
    last = _frame(b"c" * 10, opcode=0)
    assert frames.feed(last + _frame(b"d" * 200)[:20])
    assert frames.expected(MB) == len(_frame(b"d" * 200))



def test_a_frame_of_any_opcode_arriving_is_expected_and_ends_on_its_own() -> None:
    """websockets holds a control frame or a stray continuation whole before refusing
    it, as much as a data frame: it counts until its end."""
    for opcode in (9, 10, 8, 0):
        frame = _frame(b"\3\xe8" + b"p" * 70_000, opcode=opcode)
        frames, ended = _fed(b"GET / HTTP/1.1\r\n\r\n" + frame[:1000])
        assert ended == [False] and frames.expected(MB) == len(frame), opcode
        assert frames.feed(frame[1000:]) and frames.expected(MB) is None, opcode


def test_a_control_frame_between_fragments_leaves_the_message_expected() -> None:
    frames, ended = _fed(b"GET / HTTP/1.1\r\n\r\n" + _frame(b"c", fin=False)
                         + _frame(b"ping", opcode=9))
    assert ended == [False] and frames.expected(MB) == MB


def test_nothing_is_expected_once_the_connection_stopped_reading_frames() -> None:
    frames, _ = _fed(b"GET / HTTP/1.1\r\n\r\n" + _frame(b"e" * 5000)[:100])
    frames.stop()
    assert frames.expected(MB) is None
    assert not frames.feed(_frame(b"f" * 5000)[:100]) and frames.expected(MB) is None


@pytest.mark.parametrize("refused", [False, True])
async def test_a_ws_ping_arriving_holds_the_frame_budget_and_a_refused_header_none(
        refused: bool) -> None:
    """A ping of 1 MB trickled in is held by websockets until whole, so it holds the
    budget; a frame websockets refuses at its header (unmasked) holds nothing though the
    peer keeps the connection open, as websockets discards what follows."""
    async with _budgeted_ws_link() as (budget, transport, server):
        if refused:
            protocol = server.channel._ws.protocol  # type: ignore[attr-defined]
            transport.write(b"\x82\x7f" + MB.to_bytes(8, "big") + b"p" * 1000)
            await eventually(lambda: protocol.close_sent is not None)  # it refused the frame
            assert budget.held == 0
            return
        ping = _frame(b"p" * MB, opcode=9)
        transport.write(ping[:100_000])
        await eventually(lambda: budget.held == len(ping))
        transport.write(ping[100_000:])
        await eventually(lambda: budget.held == 0)


@pytest.mark.parametrize("failure", ["invalid utf-8", "too many fragments"])
async def test_a_ws_connection_failed_outside_its_frame_parser_holds_no_budget(
        failure: str) -> None:
    """websockets fails a connection for a text message of invalid UTF-8, or a message
    in too many fragments, when the message is taken, not when its frames are parsed: the
    frame arriving holds nothing from then on, though the peer keeps the connection
    open (websockets discards what follows)."""
    async with _budgeted_ws_link() as (budget, transport, server):
        if failure == "invalid utf-8":
            wire = _frame(b"\xff\xfe", opcode=1) + _frame(b"x" * MB)[:1000]
        else:
            wire = _frame(b"a", fin=False) + _frame(b"a", opcode=0, fin=False) * 4200
        protocol = server.channel._ws.protocol  # type: ignore[attr-defined]
        transport.write(wire)
        await eventually(lambda: protocol.close_sent is not None)
        assert budget.held == 0
        assert protocol.state.name == "CLOSING"  # the connection is not torn down yet


async def test_a_message_in_small_fragments_is_counted_received_as_they_arrive() -> None:
    """Each fragment is whole within the read that takes it: its bytes count at once all
    the same (the message is arriving), not only once the message is whole."""
    async with channel_pair("ws://127.0.0.1:0/link", make_config(1),
                            make_config(2)) as (client, server):
        transport = client.channel._ws.transport  # type: ignore[attr-defined]
        start = server.channel.received_bytes
        for n in range(20):
            transport.write(_frame(b"f" * 100, opcode=0 if n else 2, fin=False))
            await eventually(lambda n=n: server.channel.received_bytes >= start + 100 * (n + 1))
        transport.write(_frame(b"f" * 100, opcode=0))
        assert await server.receive() == b"f" * 2100
        await client.send(b"next")
        assert await server.receive() == b"next"
        assert server.channel.received_bytes - start >= 2104  # both messages at least


def test_ws_connections_read_into_the_shared_buffer_keeping_websockets_handlers() -> None:
    """The WebSocket connection classes are buffered protocols (asyncio reads them with
    ``recv_into``) whose every other protocol method is still websockets' own."""
    from lazily_transports._core._gated import GatedConnection
    from lazily_transports._core._ws_flow import Counting, CountingClientConnection, counting
    from websockets.asyncio.client import ClientConnection

    for made, base in ((CountingClientConnection, ClientConnection),
                       (counting(GatedConnection), GatedConnection)):
        assert issubclass(made, asyncio.BufferedProtocol)
        assert made.get_buffer is Counting.get_buffer
        for name in ("eof_received", "connection_lost", "pause_writing", "resume_writing"):
            assert getattr(made, name) is getattr(base, name), name
