"""An address that asks for TLS (``nats+tls://``) never talks in the clear: a server that
does not offer TLS is refused before any credentials are sent."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue import connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import BrokerServer


async def test_nats_tls_to_a_server_without_tls_is_refused(nats_server: BrokerServer) -> None:
    with pytest.raises(BrokerUnavailable, match="TLS"):
        await connect(f"nats+tls://127.0.0.1:{nats_server.port}")


async def test_no_password_is_sent_in_the_clear_when_tls_was_asked_for() -> None:
    """A listener that claims to be a nats-server without TLS sees no CONNECT."""
    received = bytearray()

    async def fake_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'INFO {"server_id":"x","version":"2.9.10","proto":1,'
                     b'"max_payload":1048576,"headers":true}\r\n')
        await writer.drain()
        try:
            while chunk := await asyncio.wait_for(reader.read(4096), 2):
                received.extend(chunk)
        except TimeoutError:
            pass
        writer.close()

    server = await asyncio.start_server(fake_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(BrokerUnavailable, match="TLS"):
            await connect(f"nats+tls://lq:s3cret@127.0.0.1:{port}")
    finally:
        server.close()
    assert b"s3cret" not in received

