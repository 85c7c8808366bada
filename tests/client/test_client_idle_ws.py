"""A member's idle rule on ``ws://`` client links: the bytes of a large request still
arriving count as progress while they come at the minimum rate, as on the other
transports (websockets hands over whole messages only), and a frame trickled slower
still does not hold its link."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import cbor2
from lazily_transports import LinkConfig, LinkStream, dial
from lazily_transports.websocket import WebSocketChannel

from lazily_queue import ClientAccess, ClientGrant, Node
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id
from tests.client.one_member import trickled_frame_is_cut, trickled_push_is_taken

TOKEN = b"token-of-the-web-tier"
IDLE = 0.6


@asynccontextmanager
async def ws_member() -> AsyncIterator[tuple[Node, LinkStream, Any]]:
    """A member serving client ``web`` on a ``ws://`` address with a short idle
    timeout; a link of that client (hello answered) and its socket's transport."""
    path = Path(tempfile.mkdtemp(prefix="lqw-", dir="/tmp"))
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"])],
                          listen="ws://127.0.0.1:0/clients")
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{path}/n1.sock",
                secret=b"the-cluster-secret", clients=access)
    try:
        async with node:
            await node.wait_for_leader()
            assert node.clients is not None
            node.clients.idle.timeout = IDLE
            stream = await dial(node.clients.addresses[0], LinkConfig(
                peer_id=0, session_id="x", secret=TOKEN, credential="web"))
            await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id("web")]))
            assert cbor2.loads(await stream.receive())[1] == P.OK
            channel = stream.channel
            assert isinstance(channel, WebSocketChannel)
            transport = channel._ws.transport  # to write a frame's bytes a few at a time
            try:
                yield node, stream, transport
            finally:
                await stream.aclose()
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _frame_head(length: int) -> tuple[bytes, bytes]:
    """The header of a masked binary WebSocket frame of ``length`` bytes, and its mask."""
    mask = os.urandom(4)
    return b"\x82\xff" + length.to_bytes(8, "big") + mask, mask


def _masked(payload: bytes, mask: bytes) -> bytes:
    key = (mask * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(
        len(payload), "big")


def _ws_frame(payload: bytes) -> bytes:
    head, mask = _frame_head(len(payload))
    return head + _masked(payload, mask)


def _connections(node: Node) -> int:
    assert node.clients is not None
    count: int = node.clients.stats()["connections"]
    return count


async def test_a_request_uploaded_over_ws_slower_than_the_idle_timeout_is_taken_whole(
) -> None:
    async with ws_member() as (node, stream, transport):
        jobs = node.queue("jobs")
        await jobs.push(0)
        await trickled_push_is_taken(node, stream, transport.write, _ws_frame, IDLE)


async def test_a_frame_trickled_over_ws_slower_than_the_minimum_rate_is_closed() -> None:
    async with ws_member() as (node, _stream, transport):
        head, mask = _frame_head(300_000)
        await trickled_frame_is_cut(node, transport, head + _masked(b"\0" * 200_000, mask),
                                    IDLE)


async def test_a_pong_held_up_behind_a_slow_frame_does_not_close_a_ws_link() -> None:
    """A peer's pong cannot overtake a frame of its still arriving: a WebSocket ping
    timeout (websockets' 20 s) would cut a slow upload whose bytes keep coming, so
    neither side of a ``ws://`` link times pings out (silence is the idle rule's)."""
    async with ws_member() as (node, stream, _transport):
        assert node.clients is not None
        [conn] = node.clients._conns
        member_side = conn.outbox.stream.channel
        assert isinstance(member_side, WebSocketChannel)
        assert isinstance(stream.channel, WebSocketChannel)
        for side in (member_side, stream.channel):
            assert side._ws.ping_timeout is None
            assert side._ws.ping_interval is not None  # pings still keep proxies open


def _fragment(payload: bytes, first: bool, last: bool) -> bytes:
    """A masked fragment of a binary message (the first one, a continuation, the last)."""
    head, mask = _frame_head(len(payload))
    opcode = 2 if first else 0
    return bytes([(0x80 if last else 0) | opcode]) + head[1:] + _masked(payload, mask)


async def test_a_request_sent_over_ws_in_small_fragments_slowly_is_taken_whole() -> None:
    """Each fragment is whole within the read that takes it: they count as the link's
    progress all the same."""
    async with ws_member() as (node, stream, transport):
        await node.queue("jobs").push(0)
        payload = cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", b"x" * 200_000], 5000])
        step = -(-len(payload) // 40)
        starts = range(0, len(payload), step)
        for start in starts:
            transport.write(_fragment(payload[start:start + step], start == 0,
                                      start == starts[-1]))
            await asyncio.sleep(IDLE / 8)  # five idle timeouts in all
        answer = cbor2.loads(await stream.receive())
        assert answer[:2] == [2, P.OK], answer
        assert node.queue("jobs").len() == 2
        assert node.clients is not None and node.clients.stats()["idle_closed"] == 0
