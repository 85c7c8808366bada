"""Bad bytes from a peer close that link with a logged reason; everything else goes on."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import anyio
import pytest
from lazily_transports import HandshakeError, LinkBrokenError, LinkStream, dial, listen
from lazily_transports.sockets import SocketChannel
from lazily_transports.websocket import WebSocketChannel
from transport_helpers import address_for, channel_pair, make_config

pytestmark = pytest.mark.timeout(30)


def _raw_write(stream: LinkStream, data: bytes) -> None:
    """Bypass framing and write raw bytes under an established socket link."""
    channel = stream.channel
    assert isinstance(channel, SocketChannel)
    assert channel._transport is not None
    channel._transport.write(data)


@pytest.fixture(params=["unix", "tcp"])
def socket_address(request: pytest.FixtureRequest, short_tmp: Path) -> str:
    return address_for(request.param, short_tmp)


async def test_absurd_length_closes_the_link_naming_the_size(
    socket_address: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with channel_pair(socket_address, make_config(1, max_frame_size=4096)) as (
        client,
        server,
    ):
        _raw_write(client, b"\x7f\xff\xff\xff")
        with pytest.raises(LinkBrokenError, match="2147483647 bytes") as info:
            await server.receive()
        assert "maximum frame size of 4096" in info.value.reason
        assert any("2147483647" in r.getMessage() for r in caplog.records)
        with pytest.raises(anyio.BrokenResourceError):
            with anyio.fail_after(5):
                while True:
                    await client.send(b"after")
                    await asyncio.sleep(0.001)


async def test_frame_above_negotiated_ceiling_closes_the_link(socket_address: str) -> None:
    async with channel_pair(socket_address, make_config(1, max_frame_size=100)) as (client, server):
        _raw_write(client, (101).to_bytes(4, "big") + b"x" * 101)
        with pytest.raises(LinkBrokenError, match="101 bytes"):
            await server.receive()


@pytest.mark.parametrize("answer_bytes", [
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
    b"<!DOCTYPE HTML>\n<html lang=\"en\">\n<head><title>Error response</title></head>\n",
    b"<html><body>400 Bad Request</body></html>\n",
], ids=["status-line", "doctype-page", "html-page"])
async def test_dialling_an_http_server_says_so(answer_bytes: bytes) -> None:
    """An HTTP answer's first bytes read as a frame of 1213486160 bytes (a server answering
    an unreadable request line with a bare error page, as Python's ``http.server`` does:
    as one of its first bytes): the refusal says an HTTP server answered (an http address
    given for a link address)."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(answer_bytes)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(HandshakeError, match="an HTTP server answered"):
            await dial(f"tcp://127.0.0.1:{port}", make_config(1), on_failure=lambda *_: None)
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("status_line", [b"HTTP/1.0 200 OK", b"HTTP/1.0 404 File not found"])
async def test_a_websocket_dial_answered_by_an_http_1_0_server_says_so(
        status_line: bytes) -> None:
    """An HTTP/1.0 server (Python's ``http.server``) answers the upgrade with a status
    line the WebSocket client does not parse: the refusal says an HTTP server answered,
    at once, rather than a failed upgrade retried until the dial's timeout."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(status_line + b"\r\nServer: SimpleHTTP/0.6\r\n\r\n<html></html>")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(HandshakeError, match="an HTTP server answered") as info:
            await dial(f"ws://127.0.0.1:{port}/", make_config(1), on_failure=lambda *_: None)
        assert status_line.decode() in str(info.value)
    finally:
        server.close()
        await server.wait_closed()


async def test_truncated_frame_delivers_whole_frames_then_breaks(socket_address: str) -> None:
    async with channel_pair(socket_address) as (client, server):
        await client.send(b"complete")
        await asyncio.sleep(0.01)
        _raw_write(client, b"\x00\x00\x00\x10only-part")
        await asyncio.sleep(0.01)
        raw = client.channel
        assert isinstance(raw, SocketChannel) and raw._transport is not None
        raw._transport.close()
        assert await server.receive() == b"complete"
        with pytest.raises(LinkBrokenError, match=r"truncated frame.*13 of 20 bytes"):
            await server.receive()


async def test_truncated_header_is_reported(socket_address: str) -> None:
    async with channel_pair(socket_address) as (client, server):
        _raw_write(client, b"\x00\x00")
        await asyncio.sleep(0.01)
        raw = client.channel
        assert isinstance(raw, SocketChannel) and raw._transport is not None
        raw._transport.close()
        with pytest.raises(LinkBrokenError, match="inside a frame header"):
            await server.receive()


async def test_raw_garbage_socket_does_not_disturb_other_links(
    socket_address: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    received: asyncio.Queue[bytes] = asyncio.Queue()

    async def handler(channel: LinkStream) -> None:
        received.put_nowait(await channel.receive())

    async with listen(socket_address, make_config(2), handler) as listener:
        if socket_address.startswith("unix:"):
            family, target = socket.AF_UNIX, listener.address[len("unix://") :]
        else:
            host, port = listener.address[len("tcp://") :].rsplit(":", 1)
            family, target = socket.AF_INET, (host, int(port))  # type: ignore[assignment]
        bad = socket.socket(family, socket.SOCK_STREAM)
        bad.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_connect(bad, target)
        await loop.sock_sendall(bad, b"\xff\xff\xff\xffgarbage")
        with anyio.fail_after(5):
            while await loop.sock_recv(bad, 65536):
                pass  # the hello, then EOF once the link is dropped
        bad.close()
        assert any("4294967295" in r.getMessage() for r in caplog.records)

        from lazily_transports import dial

        good = await dial(listener.address, make_config(1))
        await good.send(b"still fine")
        with anyio.fail_after(5):
            assert await received.get() == b"still fine"
        await good.aclose()


async def test_websocket_text_message_closes_the_link(short_tmp: Path) -> None:
    async with channel_pair(address_for("ws", short_tmp)) as (client, server):
        raw = client.channel
        assert isinstance(raw, WebSocketChannel)
        await raw._ws.send("not binary")
        with pytest.raises(LinkBrokenError, match="text message"):
            await server.receive()


async def test_websocket_oversized_message_closes_the_link(short_tmp: Path) -> None:
    address = address_for("ws", short_tmp)
    async with channel_pair(address, make_config(1, max_frame_size=1000)) as (client, server):
        raw = client.channel
        assert isinstance(raw, WebSocketChannel)
        await raw._ws.send(b"x" * 5000)
        with pytest.raises(LinkBrokenError, match=r"5000 bytes|1009"):
            await server.receive()
