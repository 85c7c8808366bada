"""A member closes a client link it has neither read from nor written to for its idle
timeout (a client that stopped, vanished without closing its socket or stalled
mid-frame); a live client the member only writes to is never taken for one."""

from __future__ import annotations

import asyncio
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkStream
from lazily_transports.sockets import SocketChannel

from lazily_queue import InvalidConfiguration, Node, connect
from lazily_queue.client import protocol as P
from lazily_queue.client.access import ClientGrant
from lazily_queue.client.connection import ClientConnection
from lazily_queue.client.idle import MAX_PING_INTERVAL, IdleLinks
from tests.client.one_member import (
    TOKEN,
    linked,
    one_member,
    trickled_frame_is_cut,
    trickled_push_is_taken,
    until,
)

IDLE = 0.6


def _connections(node: Node) -> Any:
    assert node.clients is not None
    return node.clients.stats()["connections"]


@pytest.mark.parametrize("stall", ["silent", "mid-frame"])
async def test_a_client_link_silent_past_the_idle_timeout_is_closed(
    stall: str, caplog: pytest.LogCaptureFixture,
) -> None:
    async with one_member() as node:
        assert node.clients is not None
        node.clients.idle.timeout = IDLE
        stream = await linked(node)
        await stream.send(cbor2.dumps([2, P.WATCH, "queue", "jobs"]))
        assert cbor2.loads(await stream.receive())[1] == P.OK
        if stall == "mid-frame":  # a frame's first bytes, then nothing
            await stream.send(cbor2.dumps([3, P.PING])[:1])
        assert _connections(node) == 1
        await until(lambda: _connections(node) == 0)
        assert node.clients.stats()["watched"] == 0
        assert node.clients.stats()["idle_closed"] == 1
        assert "link closed" in caplog.text
        await stream.aclose()


async def test_a_client_the_member_only_sends_to_stays_linked() -> None:
    """A client that reads a busy object and sends nothing of its own (it pings only
    when it hears nothing) takes what the member writes, so the member keeps its link
    (and its mirror) through many idle timeouts."""
    async with one_member() as node:
        assert node.clients is not None and node.listen is not None
        node.clients.idle.timeout = IDLE
        async with connect([node.listen], ("web", TOKEN), ping_interval=IDLE / 4,
                           ping_timeout=5.0) as client:
            mirrored = client.queue("jobs")
            assert mirrored.len() == 0  # read: mirrored, every push reaches it
            await client.barrier()
            jobs = node.queue("jobs")
            for n in range(int(5 * IDLE / 0.05)):  # the member writes to it all along
                await jobs.push(n)
                await asyncio.sleep(0.05)
            await client.barrier()
            assert mirrored.len() == jobs.len()
            assert client.links == 1


async def test_a_request_uploaded_slower_than_the_idle_timeout_is_taken_whole() -> None:
    """The bytes of one large request trickle in over several idle timeouts (a slow
    uplink): they are progress, so the member reads the request to its end and answers
    it."""
    async with one_member() as node:
        assert node.clients is not None
        node.clients.idle.timeout = IDLE
        jobs = node.queue("jobs")
        await jobs.push(0)
        stream = await linked(node)
        channel = stream.channel
        assert isinstance(channel, SocketChannel)
        transport = channel._transport  # to write a frame's bytes a few at a time
        assert transport is not None
        await trickled_push_is_taken(node, stream, transport.write,
                                     lambda p: len(p).to_bytes(4, "big") + p, IDLE)
        await stream.aclose()


async def test_a_frame_trickled_slower_than_the_minimum_rate_does_not_hold_its_link() -> None:
    """Most of a large request, then one byte every so often (a slowloris): the bytes
    still arrive, but slower than the member's minimum rate, so the link, and the
    half-read frame it holds, is closed after an idle timeout as a silent one is."""
    async with one_member() as node:
        assert node.clients is not None
        node.clients.idle.timeout = IDLE
        stream = await linked(node)
        channel = stream.channel
        assert isinstance(channel, SocketChannel)
        transport = channel._transport
        assert transport is not None
        await trickled_frame_is_cut(node, transport,
                                    (300_000).to_bytes(4, "big") + b"\0" * 200_000, IDLE)
        await stream.aclose()


async def test_a_half_read_frame_is_not_held_by_what_the_member_writes() -> None:
    """Most of a request, then nothing, on a link that watches a busy object: the
    member's own writes do not keep the half-read frame (it is closed after an idle
    timeout), though they keep a link with no frame half-read."""
    async with one_member() as node:
        assert node.clients is not None
        node.clients.idle.timeout = IDLE
        jobs = node.queue("jobs")
        stalled, reading = await linked(node), await linked(node)
        for stream in (stalled, reading):
            await stream.send(cbor2.dumps([2, P.WATCH, "queue", "jobs"]))
            assert cbor2.loads(await stream.receive())[1] == P.OK
        channel = stalled.channel
        assert isinstance(channel, SocketChannel) and channel._transport is not None
        channel._transport.write((300_000).to_bytes(4, "big") + b"\0" * 200_000)

        async def busy() -> None:
            for n in range(10**6):
                await jobs.push(n)
                await asyncio.sleep(IDLE / 4)

        async def drain(stream: LinkStream) -> None:
            while True:
                await stream.receive()

        tasks = [asyncio.create_task(f) for f in (busy(), drain(stalled), drain(reading))]
        try:
            await until(lambda: _connections(node) == 1, seconds=10 * IDLE)
            await asyncio.sleep(3 * IDLE)
            assert _connections(node) == 1  # the one only written to stays
        finally:
            for task in tasks:
                task.cancel()
        assert node.clients.stats()["idle_closed"] == 1
        await stalled.aclose()
        await reading.aclose()


class _Channel:
    """A link whose member writes nothing and reads nothing: bytes received only."""

    def __init__(self) -> None:
        self.channel = self
        self.received_bytes = 0
        self.remote_address = "unix:///idle#peer"

    def send_nowait(self, data: bytes) -> None:
        pass

    def flush(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_a_link_the_member_holds_off_reading_is_not_silent() -> None:
    """While a link's requests wait for room (its ops in flight, or every client's),
    the member is not reading it: its client's pings wait unread, and the link stays."""
    conn = ClientConnection(_Channel(),  # type: ignore[arg-type]
                            ClientGrant("web", TOKEN, produce=["*"]), 8)
    idle = IdleLinks([conn], timeout=IDLE)
    start = conn.heard
    conn.blocked = True
    conn.outbox.stream.channel.received_bytes += 10  # a ping, left unread
    assert idle.sweep(start + 5 * IDLE) == 0 and not conn.closed
    conn.blocked = False  # read again: silent from here on
    assert idle.sweep(start + 6.5 * IDLE) == 1 and conn.closed
    await conn.outbox.wait_closed()


def test_a_ping_interval_members_would_take_for_silence_is_refused() -> None:
    with pytest.raises(InvalidConfiguration, match="ping_interval must be at most"):
        connect(["unix:///nowhere"], ("web", TOKEN), ping_interval=MAX_PING_INTERVAL * 2)
