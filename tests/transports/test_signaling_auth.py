"""The signaling server's own token, WebRTC links through a server that requires it, and
ICE servers given as plain settings."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket

import anyio
import pytest
from lazily_transports import LinkAttribute, SchemeTable, dial, listen
from lazily_transports.webrtc import IceSettings, WebRTCTransport
from lazily_transports.webrtc.ice import ice_servers_from, new_peer_connection
from lazily_transports.webrtc.signaling import SignalingClient, SignalingError, SignalingServer
from transport_helpers import make_config

TOKEN = "signaling-token-for-tests"


async def test_the_server_refuses_joins_without_the_token() -> None:
    async with SignalingServer(token=TOKEN) as server:
        room = server.url + "/room"
        with pytest.raises(SignalingError) as missing:
            await SignalingClient.connect(room, 1)
        assert missing.value.code == "unauthorized"
        assert "no token was sent" in missing.value.message
        with pytest.raises(SignalingError, match="the token was refused"):
            await SignalingClient.connect(room, 1, token="wrong")
        async with await SignalingClient.connect(room, 1, token=TOKEN) as client:
            assert client.peer == 1
        assert server.refused == 2


def _table(token: str | None) -> SchemeTable:
    transport = WebRTCTransport(IceSettings(host_addresses=("127.0.0.1",)),
                                signaling_token=token)
    return SchemeTable({"webrtc+ws": transport})


async def test_links_through_a_server_with_a_token() -> None:
    async with SignalingServer(token=TOKEN) as server:
        address = server.url.replace("ws://", "webrtc+ws://") + "/cluster"
        accepted: list[int] = []

        async def handler(stream: object) -> None:
            accepted.append(stream.extra(LinkAttribute.peer_id))  # type: ignore[attr-defined]
            await anyio.sleep(0.2)

        async with listen(address, make_config(2), handler, schemes=_table(TOKEN)):
            link = await dial(address + "?peer=2", make_config(1), schemes=_table(TOKEN))
            await link.aclose()
            with pytest.raises(OSError) as refused:
                await dial(address + "?peer=2", make_config(3), schemes=_table("wrong"))
            assert refused.value.errno == errno.EACCES
            assert "unauthorized" in str(refused.value)
        assert accepted == [1]


def test_ice_servers_from_plain_settings() -> None:
    servers = ice_servers_from([
        {"urls": "stun:stun.example.org:3478"},
        {"urls": ["turn:turn.example.org:3478?transport=udp"], "username": "edge",
         "credential": "pw"},
    ])
    assert [s.urls for s in servers] == [["stun:stun.example.org:3478"],
                                         ["turn:turn.example.org:3478?transport=udp"]]
    assert (servers[1].username, servers[1].credential) == ("edge", "pw")
    pc = new_peer_connection(IceSettings(ice_servers=servers))
    configuration = pc._RTCPeerConnection__configuration  # type: ignore[attr-defined]
    assert configuration.iceServers == list(servers)
    for bad, message in (([{"urls": "http://x"}], "urls must be"),
                         ([{"urls": "turn:x:3478"}], "needs a username and credential"),
                         ([{"urls": "stun:x", "password": "p"}], "unknown key")):
        with pytest.raises(ValueError, match=message):
            ice_servers_from(bad)


async def test_refused_connections_do_not_fill_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with SignalingServer(token=TOKEN) as server:
        for _ in range(30):
            with pytest.raises(SignalingError):
                await SignalingClient.connect(server.url + "/room", 1, token="wrong")
        assert server.refused == 30
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert 1 <= len(lines) <= 12, lines[:20]


async def test_strangers_cannot_hold_every_connection_in_its_upgrade() -> None:
    async with SignalingServer(token=TOKEN, max_pending_per_source=2,
                               open_timeout=30) as server:
        loop = asyncio.get_running_loop()
        held = []
        for _ in range(2):  # requests never finished: each holds a slot
            sock = socket.socket()
            sock.setblocking(False)
            await loop.sock_connect(sock, ("127.0.0.1", server.port))
            await loop.sock_sendall(sock, b"GET /room HTTP/1.1\r\nHost: x\r\n")
            held.append(sock)
        with pytest.raises(ConnectionError):  # over the cap: closed at once
            await SignalingClient.connect(server.url + "/room", 1, token=TOKEN, timeout=5)
        assert server.upgrades.refused >= 1 and server.upgrades.pending == 2
        for sock in held:
            sock.close()
        with anyio.fail_after(5):
            while server.upgrades.pending:  # noqa: ASYNC110 - polls plain state
                await anyio.sleep(0.01)
        async with await SignalingClient.connect(server.url + "/room", 1, token=TOKEN) as client:
            assert client.peer == 1
        assert server.upgrades.pending == 0  # a joined member holds no slot


async def test_an_unfinished_upgrade_is_closed_after_the_open_timeout() -> None:
    async with SignalingServer(token=TOKEN, open_timeout=0.3) as server:
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", server.port))
        await loop.sock_sendall(sock, b"GET /room HTTP/1.1\r\nHost: x\r\n")
        with anyio.fail_after(10):
            while await loop.sock_recv(sock, 4096):
                pass
        sock.close()
