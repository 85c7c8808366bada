"""LinkStream behaviour, identical over memory, Unix socket, TCP and WebSocket links."""

from __future__ import annotations

import asyncio
import select
from typing import Any

import anyio
import pytest
from lazily_transports import (
    DataChannel,
    FrameStream,
    FrameTooLargeError,
    LinkAttribute,
    LinkBrokenError,
    LinkStream,
)
from lazily_transports._core._buffered import BufferedChannel
from lazily_transports.websocket import WebSocketChannel
from transport_helpers import address_for, channel_pair, make_config

pytestmark = pytest.mark.timeout(30)


async def test_round_trip_and_negotiated_attributes(address: str) -> None:
    dialer = make_config(1, max_frame_size=64 * 1024)
    acceptor = make_config(2, max_frame_size=1024 * 1024)
    async with channel_pair(address, dialer, acceptor) as (client, server):
        for stream, me, peer in ((client, 1, 2), (server, 2, 1)):
            assert stream.extra(LinkAttribute.peer_id) == peer
            assert stream.extra(LinkAttribute.local_peer_id) == me
            assert stream.extra(LinkAttribute.session_id) == "test-cluster"
            assert stream.extra(LinkAttribute.max_frame_size) == 64 * 1024
            assert stream.extra(LinkAttribute.authenticated) is True
            assert stream.extra(LinkAttribute.fragmentation_supported) is False
            assert stream.extra(LinkAttribute.epoch) >= 1
            assert "raft-queue-v1" in stream.extra(LinkAttribute.remote_features)
            assert stream.extra(LinkAttribute.remote_address)
        await client.send(b"ping")
        assert await server.receive() == b"ping"
        await server.send(b"pong")
        assert await client.receive() == b"pong"


async def test_many_frames_arrive_whole_and_in_order(address: str) -> None:
    frames = [bytes([i % 256]) * (i % 700) for i in range(3000)]
    async with channel_pair(address) as (client, server):

        async def produce() -> None:
            for frame in frames:
                await client.send(frame)

        task = asyncio.create_task(produce())
        received = [await server.receive() for _ in frames]
        await task
        assert received == frames


async def test_large_frames_in_both_directions(address: str) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB
    async with channel_pair(address) as (client, server):
        sending = asyncio.create_task(client.send(big))
        assert await server.receive() == big
        await sending
        await server.send(big[::-1])
        assert await client.receive() == big[::-1]


async def test_send_above_negotiated_ceiling_raises_clearly(address: str) -> None:
    async with channel_pair(address, make_config(1, max_frame_size=1000)) as (client, server):
        with pytest.raises(FrameTooLargeError, match="1001 bytes exceeds the maximum frame size"):
            await server.send(b"x" * 1001)
        with pytest.raises(FrameTooLargeError):
            client.send_nowait(b"x" * 1001)
        await server.send(b"x" * 1000)
        assert len(await client.receive()) == 1000


async def test_send_accepts_bytes_like_and_rejects_text(address: str) -> None:
    async with channel_pair(address) as (client, server):
        await client.send(bytearray(b"abc"))  # type: ignore[arg-type]
        await client.send(memoryview(b"def"))  # type: ignore[arg-type]
        assert [await server.receive(), await server.receive()] == [b"abc", b"def"]
        with pytest.raises(TypeError, match="frames must be bytes"):
            await client.send("text")  # type: ignore[arg-type]


async def test_clean_close_delivers_queued_frames_then_end_of_stream(address: str) -> None:
    async with channel_pair(address) as (client, server):
        for i in range(50):
            await client.send(b"%d" % i)
        await client.aclose()
        received = [await server.receive() for _ in range(50)]
        assert received == [b"%d" % i for i in range(50)]
        with pytest.raises(anyio.EndOfStream):
            await server.receive()
        assert server.close_reason is not None


async def test_local_close_makes_further_use_a_closed_resource_error(address: str) -> None:
    async with channel_pair(address) as (client, _server):
        await client.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await client.receive()
        with pytest.raises(anyio.ClosedResourceError):
            await client.send(b"late")
        await client.aclose()  # idempotent


async def test_sending_to_a_closed_peer_eventually_breaks(address: str) -> None:
    async with channel_pair(address) as (client, server):
        await server.aclose()
        with pytest.raises(anyio.EndOfStream):
            await client.receive()
        with pytest.raises(anyio.BrokenResourceError):
            with anyio.fail_after(5):
                while True:
                    await client.send(b"x" * 1024)
                    await asyncio.sleep(0.001)


async def test_backpressure_blocks_the_sender_and_loses_nothing(address: str) -> None:
    small = make_config(1, send_buffer_size=64 * 1024, receive_buffer_size=64 * 1024)
    other = make_config(2, send_buffer_size=64 * 1024, receive_buffer_size=64 * 1024)
    frame = b"b" * 32 * 1024
    async with channel_pair(address, small, other) as (client, server):
        assert client.send_ready()
        sent = 0
        full_checks = 0
        for _ in range(20000):
            try:
                client.send_nowait(frame + sent.to_bytes(4, "big"))
            except anyio.WouldBlock:
                assert not client.send_ready()  # says so before a frame is refused
                full_checks += 1
                if full_checks == 4:
                    break  # still full after in-flight writes had time to land
                await asyncio.sleep(0.05)
                continue
            full_checks = 0
            sent += 1
            await asyncio.sleep(0)
        else:
            pytest.fail("send_nowait never reported a full buffer")
        blocked = asyncio.create_task(client.send(frame + sent.to_bytes(4, "big")))
        for _ in range(100):  # the peer reads nothing: no turn of the loop frees room
            await asyncio.sleep(0)
        assert not blocked.done(), "send() returned although the peer reads nothing"
        for index in range(sent + 1):
            data = await server.receive()
            assert int.from_bytes(data[-4:], "big") == index
        await blocked
        with anyio.fail_after(5):  # a hang detector
            while not client.send_ready():  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.01)


async def test_receive_nowait_and_readiness(address: str) -> None:
    async with channel_pair(address) as (client, server):
        with pytest.raises(anyio.WouldBlock):
            server.receive_nowait()
        waiter = asyncio.create_task(server.wait_receive_ready())
        for _ in range(20):  # nothing was sent: no turn of the loop makes it ready
            await asyncio.sleep(0)
        assert not waiter.done()
        await client.send(b"ready")
        await asyncio.wait_for(waiter, 5)
        assert server.receive_nowait() == b"ready"


async def test_receive_queued_returns_none_instead_of_raising(address: str) -> None:
    async with channel_pair(address) as (client, server):
        raw = server.channel
        assert isinstance(raw, BufferedChannel)
        assert raw.receive_queued() is None  # nothing queued: no WouldBlock
        await client.send(b"one")
        await client.send(b"two")
        await asyncio.wait_for(server.wait_receive_ready(), 5)
        with anyio.fail_after(5):  # a hang detector
            while len(raw._rx) < 2:  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.01)
        assert [raw.receive_queued(), raw.receive_queued(), raw.receive_queued()] == [
            b"one", b"two", None]
        await client.aclose()
        with anyio.fail_after(5):
            while not raw.ended:  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.01)
        assert raw.receive_queued() is None  # ended: receive_nowait says how
        with pytest.raises(anyio.EndOfStream):
            raw.receive_nowait()


async def test_channel_is_an_anyio_object_stream(address: str) -> None:
    from anyio.abc import ObjectStream

    async with channel_pair(address) as (client, server):
        assert isinstance(client, ObjectStream) and isinstance(client, FrameStream)
        assert isinstance(client, LinkStream)
        async with anyio.create_task_group() as group:
            group.start_soon(client.send, b"via task group")
            assert await server.receive() == b"via task group"


def test_link_broken_error_is_an_anyio_broken_resource_error() -> None:
    error = LinkBrokenError("reset by peer")
    assert isinstance(error, anyio.BrokenResourceError)
    assert error.reason == "reset by peer"


async def test_the_raw_channel_holds_only_what_its_transport_needs(address: str) -> None:
    async with channel_pair(address) as (client, _server):
        raw = client.channel
        assert isinstance(raw, DataChannel) and not isinstance(raw, LinkStream)
        for name in ("remote_peer_id", "session_id", "epoch", "authenticated", "established"):
            assert not hasattr(raw, name), name
        with pytest.raises(anyio.TypedAttributeLookupError):
            raw.extra(LinkAttribute.peer_id)
        assert raw.extra(LinkAttribute.remote_address) == client.extra(
            LinkAttribute.remote_address
        )
        # The stream's frame operations are the channel's own: nothing runs in between.
        assert client.send_nowait == raw.send_nowait
        assert client.receive_nowait == raw.receive_nowait
        assert client.receive == raw.receive


async def test_closing_the_stream_closes_its_channel(address: str) -> None:
    async with channel_pair(address) as (client, _server):
        await client.aclose()
        assert client.channel.close_reason == client.close_reason == "closed locally"


@pytest.mark.parametrize("kind", ["unix", "tcp"])
async def test_flush_hands_queued_frames_to_the_socket_at_once(kind: str, short_tmp: Any) -> None:
    """``send_nowait`` frames are written together later in the loop iteration; ``flush``
    writes them now (before the caller blocks on a disk, say)."""
    async with channel_pair(address_for(kind, short_tmp)) as (client, server):
        sock = server.channel._transport.get_extra_info("socket")  # type: ignore[attr-defined]
        readable = select.poll()  # not select(): the suite may hold fds past FD_SETSIZE
        readable.register(sock.fileno(), select.POLLIN)
        client.send_nowait(b"queued")
        assert not readable.poll(0)  # nothing written yet
        client.channel.flush()
        assert readable.poll(1000)  # written, without a loop iteration
        assert await server.receive() == b"queued"


@pytest.mark.parametrize("kind", ["unix", "tcp"])
async def test_a_held_frame_waits_for_flush_without_a_callback(kind: str, short_tmp: Any) -> None:
    """``send_held`` queues like ``send_nowait`` but schedules no flush of its own: the
    frame leaves with the caller's ``flush`` (with a ``send_nowait`` frame's, if one)."""
    async with channel_pair(address_for(kind, short_tmp)) as (client, server):
        sock = server.channel._transport.get_extra_info("socket")  # type: ignore[attr-defined]
        readable = select.poll()
        readable.register(sock.fileno(), select.POLLIN)
        shown = getattr(asyncio.get_running_loop(), "_ready", None)  # not on uvloop
        ready = None if shown is None else len(shown)
        client.channel.send_held(b"held")
        assert (None if shown is None else len(shown)) == ready  # nothing scheduled
        await asyncio.sleep(0.01)
        assert not readable.poll(0)  # nothing written: it waits for flush
        client.channel.flush()
        assert readable.poll(1000)
        assert await server.receive() == b"held"
        with pytest.raises(FrameTooLargeError):
            client.channel.send_held(b"x" * (client.channel.max_frame_size + 1))
        client.channel.send_held(bytearray(b"converted"))  # type: ignore[arg-type]
        client.send_nowait(b"scheduled")  # a flush of its own, which takes both
        assert await server.receive() == b"converted"
        assert await server.receive() == b"scheduled"


async def test_received_bytes_counts_a_frame_still_arriving(address: str) -> None:
    """``received_bytes`` grows with every byte taken from the connection, a frame that
    is not whole yet included (over a stream socket, the first half of one)."""
    async with channel_pair(address) as (client, server):
        before = server.channel.received_bytes
        await client.send(b"x" * 1000)
        assert await server.receive() == b"x" * 1000
        assert server.channel.received_bytes >= before + 1000
        if isinstance(client.channel, WebSocketChannel):
            await _ws_frame_still_arriving(client.channel, server.channel)
            return
        transport = getattr(client.channel, "_transport", None)
        if transport is None:
            return  # message transports carry whole frames only
        before = server.channel.received_bytes
        transport.write((1000).to_bytes(4, "big") + b"y" * 500)  # half a frame
        await asyncio.wait_for(_grown(server.channel, before + 504), 5)
        with pytest.raises(anyio.WouldBlock):
            server.receive_nowait()
        transport.write(b"y" * 500)
        assert await server.receive() == b"y" * 1000


async def _ws_frame_still_arriving(client: WebSocketChannel, server: DataChannel) -> None:
    """Over ``ws://`` (websockets hands over whole messages): the bytes of a frame not
    whole yet count as they arrive, the frame is counted once when whole, and a ping
    (a control frame whole at once) does not count."""
    before = server.received_bytes
    await client._ws.ping()
    await asyncio.sleep(0.1)
    assert server.received_bytes == before
    mask = b"\x01\x02\x03\x04"
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(b"y" * 1000))
    transport = client._ws.transport
    transport.write(b"\x82\xfe" + (1000).to_bytes(2, "big") + mask + payload[:500])
    await asyncio.wait_for(_grown(server, before + 500), 5)
    with pytest.raises(anyio.WouldBlock):
        server.receive_nowait()
    transport.write(payload[500:])
    assert await server.receive() == b"y" * 1000
    assert before + 1000 <= server.received_bytes <= before + 1008


async def _grown(channel: DataChannel, size: int) -> None:
    while channel.received_bytes < size:  # noqa: ASYNC110 - polls plain state
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("kind", ["unix", "tcp"])
async def test_an_abort_drops_what_is_held_and_sent_bytes_bounds_what_left(
    kind: str, short_tmp: Any
) -> None:
    """Bytes still held in this process when the link is aborted never reach the peer:
    it reads no more than ``sent_bytes`` (over a Unix socket, exactly that)."""
    small = make_config(1, send_buffer_size=256 * 1024, receive_buffer_size=64 * 1024)
    other = make_config(2, send_buffer_size=256 * 1024, receive_buffer_size=64 * 1024)
    frame = b"h" * 20_000
    async with channel_pair(address_for(kind, short_tmp), small, other) as (client, server):
        channel = client.channel
        taken, before = 0, channel.accepted_bytes  # the handshake's frames included
        for _ in range(2000):  # the peer reads nothing: its buffers and ours fill
            try:
                client.send_nowait(frame)
                taken += 1
            except anyio.WouldBlock:
                break
            await asyncio.sleep(0)
        assert channel.accepted_bytes - before == taken * (len(frame) + 4)
        held = channel.accepted_bytes - (channel.sent_bytes or 0)
        assert held > len(frame)
        client.abort()
        left = channel.sent_bytes
        assert left is not None and left == channel.accepted_bytes - held
        received = 0
        with pytest.raises((LinkBrokenError, anyio.EndOfStream)):
            while True:
                received += len(await server.receive()) + 4
        assert received <= left - before
        if kind == "unix":
            assert received == (left - before) // (len(frame) + 4) * (len(frame) + 4)


async def test_links_reading_at_once_keep_their_own_bytes(short_tmp: Any) -> None:
    """Socket links of one thread read into one shared buffer: frames larger than it,
    sent both ways on several links at once, arrive whole and unmixed."""
    size = 3 * 256 * 1024 + 17
    patterns = [bytes([k]) * 7 + bytes(range(256)) for k in range(4)]

    def frame(k: int) -> bytes:
        return (patterns[k] * (size // len(patterns[k]) + 1))[:size]

    async def exchange(client: LinkStream, server: LinkStream, k: int) -> None:
        sends = [asyncio.create_task(client.send(frame(k))),
                 asyncio.create_task(server.send(frame(k + 1)))]
        got = await asyncio.gather(server.receive(), client.receive())
        await asyncio.gather(*sends)
        assert got == [frame(k), frame(k + 1)]

    async with channel_pair(address_for("unix", short_tmp)) as (a, b), \
            channel_pair(address_for("tcp", short_tmp)) as (c, d):
        await asyncio.gather(exchange(a, b, 0), exchange(c, d, 2))


async def test_waits_for_the_end_given_up_leave_nothing_behind(address: str) -> None:
    """A member races each large client frame's decoding against its link's end: a wait
    given up (the frame's turn came first) must not stay queued until the link ends."""
    async with channel_pair(address) as (client, server):
        channel = server.channel
        if not isinstance(channel, BufferedChannel):
            pytest.skip("not a buffered channel")
        for _ in range(100):
            waiting = asyncio.ensure_future(channel.wait_ended())
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        assert channel._end_waiters == []
        ended = asyncio.ensure_future(channel.wait_ended())
        await asyncio.sleep(0)
        await client.aclose()
        await asyncio.wait_for(ended, 10)
