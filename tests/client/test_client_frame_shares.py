"""A member's frame budget counts ``ws://`` client links as the others (from a frame's
header on), and gives each client name a share of it when it serves several, so one
client's frames still arriving leave room for the others'."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import cbor2
import pytest
from lazily_transports import FrameBudget, LinkConfig, LinkStream, dial
from lazily_transports.sockets import SocketChannel
from lazily_transports.websocket import WebSocketChannel

from lazily_queue import ClientAccess, ClientGrant, Node
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id
from tests.client.one_member import client_stats, one_member, unread_while_waiting, until

TOKENS = {"web": b"token-of-the-web-tier", "other": b"token-of-the-other-tier"}


@asynccontextmanager
async def member(frame_budget: int, listen: str | None = None,
                 names: tuple[str, ...] = ("web", "other")) -> AsyncIterator[Node]:
    """A one-member cluster serving ``names`` (produce on every name) on ``listen`` (by
    default its own Unix socket) with a frame budget of ``frame_budget`` bytes."""
    access = ClientAccess([ClientGrant(n, TOKENS[n], produce=["*"]) for n in names],
                          listen=listen, frame_budget=frame_budget)
    async with one_member(access) as node:
        yield node


async def link(node: Node, name: str = "web") -> LinkStream:
    """A raw link of client ``name`` to ``node``, its hello answered."""
    assert node.clients is not None
    stream = await dial(node.clients.addresses[0], LinkConfig(
        peer_id=0, session_id="x", secret=TOKENS[name], credential=name))
    await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id(name)]))
    assert cbor2.loads(await stream.receive())[1] == P.OK
    return stream


def push(size: int) -> bytes:
    """A push request of about ``size`` bytes to queue "jobs"."""
    return cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", b"x" * size], 5000])


def framed(stream: LinkStream, payload: bytes) -> bytes:
    """``payload`` as its link carries it: a WebSocket binary frame (masked with a zero
    key), or a length-prefixed frame."""
    if isinstance(stream.channel, WebSocketChannel):
        return b"\x82\xff" + len(payload).to_bytes(8, "big") + b"\0\0\0\0" + payload
    return len(payload).to_bytes(4, "big") + payload


def write(stream: LinkStream, data: bytes) -> None:
    """Write ``data`` as they are on ``stream``'s connection."""
    channel = stream.channel
    if isinstance(channel, WebSocketChannel):
        transport: Any = channel._ws.transport
    else:
        assert isinstance(channel, SocketChannel)
        transport = channel._transport
    transport.write(data)


async def test_a_ws_frame_still_arriving_is_counted_and_one_that_does_not_fit_waits(
) -> None:
    async with member(300_000, "ws://127.0.0.1:0/clients", names=("web",)) as node:
        first, second = await link(node), await link(node)
        wire_a, wire_b = framed(first, push(200_000)), framed(second, push(150_000))
        write(first, wire_a[:100_000])
        await until(lambda: client_stats(node)["frame_budget_held"] == len(wire_a))
        write(second, wire_b[:50_000])
        await until(lambda: client_stats(node)["frame_budget_waiting"] == 1)
        write(second, wire_b[50_000:])  # not read while it waits
        await until(lambda: unread_while_waiting(node) == len(wire_b) - 50_000)
        assert client_stats(node)["frame_budget_held"] == len(wire_a)
        assert client_stats(node)["frame_budget_waiting"] == 1
        write(first, wire_a[100_000:])  # the first is whole: the second is read
        assert cbor2.loads(await first.receive())[:2] == [2, P.OK]
        assert cbor2.loads(await second.receive())[:2] == [2, P.OK]
        assert client_stats(node)["frame_budget_held"] == 0
        await first.aclose()
        await second.aclose()


async def test_a_ws_message_in_fragments_reserves_the_largest_request() -> None:
    async with member(64 * 1024 * 1024, "ws://127.0.0.1:0/clients") as node:
        assert node.clients is not None
        stream = await link(node)
        payload = push(100_000)
        write(stream, b"\x02\x80" + b"\0\0\0\0")  # a first fragment, empty
        await until(lambda: client_stats(node)["frame_budget_held"] > 0)
        assert client_stats(node)["frame_budget_held"] == node.clients.max_request_bytes
        write(stream, b"\x80\xff" + len(payload).to_bytes(8, "big") + b"\0\0\0\0" + payload)
        assert cbor2.loads(await stream.receive())[:2] == [2, P.OK]
        assert client_stats(node)["frame_budget_held"] == 0
        await stream.aclose()


async def test_one_client_holds_at_most_its_share_so_another_clients_frame_is_read(
) -> None:
    """Client "web" has two large frames arriving; only the first fits its share (a
    quarter of the budget), so "other"'s frame, coming after, is read and answered
    while web's second waits."""
    async with member(300_000) as node:
        web_a, web_b, other = await link(node), await link(node), await link(node, "other")
        wire_a, wire_b = framed(web_a, push(140_000)), framed(web_b, push(140_000))
        write(web_a, wire_a[:50_000])
        await until(lambda: client_stats(node)["frame_budget_held"] == len(wire_a))
        write(web_b, wire_b[:50_000])
        await until(lambda: client_stats(node)["frame_budget_waiting"] == 1)
        write(other, framed(other, push(100_000)))
        answer = cbor2.loads(await asyncio.wait_for(other.receive(), 10))
        assert answer[:2] == [2, P.OK]
        assert client_stats(node)["frame_budget_waiting"] == 1  # web's second still waits
        write(web_a, wire_a[50_000:])  # web's first is whole: its second is read
        write(web_b, wire_b[50_000:])
        assert cbor2.loads(await web_a.receive())[:2] == [2, P.OK]
        assert cbor2.loads(await web_b.receive())[:2] == [2, P.OK]
        for stream in (web_a, web_b, other):
            await stream.aclose()


async def test_a_frame_refused_after_waiting_for_its_clients_share_names_it() -> None:
    async with member(300_000) as node:
        assert node.clients is not None
        node.clients.idle.timeout = 0.5
        holder, waiter = await link(node), await link(node)
        write(holder, framed(holder, push(140_000))[:1000])

        async def trickle() -> None:  # the holder's bytes keep coming: it stays linked
            while True:
                await asyncio.sleep(0.05)
                write(holder, b"x" * 200)

        task = asyncio.create_task(trickle())
        try:
            await until(lambda: client_stats(node)["frame_budget_held"] > 0)
            write(waiter, framed(waiter, push(100_000))[:5000])
            frame = cbor2.loads(await asyncio.wait_for(waiter.receive(), 10))
        finally:
            task.cancel()
        assert frame[:2] == [0, P.ERROR] and frame[2][0] == "frame_budget", frame
        assert "of them client 'web''s own, which may hold 75000" in frame[2][1]
        await holder.aclose()
        await waiter.aclose()


async def test_the_only_client_of_a_member_has_the_whole_budget() -> None:
    async with member(300_000, names=("web",)) as node:
        first, second = await link(node), await link(node)
        wire_a, wire_b = framed(first, push(140_000)), framed(second, push(140_000))
        write(first, wire_a[:50_000])
        write(second, wire_b[:50_000])
        await until(lambda: client_stats(node)["frame_budget_held"] == len(wire_a) + len(wire_b))
        assert client_stats(node)["frame_budget_waiting"] == 0
        write(first, wire_a[50_000:])
        write(second, wire_b[50_000:])
        assert cbor2.loads(await first.receive())[:2] == [2, P.OK]
        assert cbor2.loads(await second.receive())[:2] == [2, P.OK]
        await first.aclose()
        await second.aclose()


class _Holder:
    def __init__(self) -> None:
        self.granted: list[int] = []

    def budget_granted(self, size: int) -> None:
        self.granted.append(size)


def test_a_frame_waiting_for_its_owners_share_lets_other_owners_pass_in_order() -> None:
    budget = FrameBudget(100, share=40)
    assert budget.reserve(_Holder(), 60, "web")  # alone: one frame above the share
    own, other, third = _Holder(), _Holder(), _Holder()
    assert not budget.reserve(own, 10, "web")  # web holds its share: it waits
    assert budget.reserve(other, 30, "other")  # another owner's passes it
    assert not budget.reserve(third, 30, "third")  # no room in all: waits, in order
    assert not budget.reserve(_Holder(), 5, "fourth")  # behind the one waiting for room
    budget.release(30, "other")
    assert third.granted == [30] and own.granted == []
    budget.release(60, "web")
    assert own.granted == [10]
    assert budget.held_by("web") == 10 and budget.held == 45


def test_a_share_is_a_positive_int() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="share"):
            FrameBudget(100, share=bad)  # type: ignore[arg-type]
