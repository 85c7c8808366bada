"""Handshake and mutual authentication over real links: refusals, replays, timeouts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import cbor2
import pytest
from lazily_transports import (
    DEFAULT_SCHEMES,
    AuthenticationError,
    DataChannel,
    HandshakeError,
    HandshakeTimeoutError,
    IncompatiblePeerError,
    LinkAttribute,
    LinkConfig,
    LinkStream,
    PeerRejectedError,
    dial,
    establish,
    listen,
)
from lazily_transports._core._handshake import Handshake, Hello, decode_message, encode_message
from transport_helpers import channel_pair, make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)


class Recorder:
    """A listener handler that records which peers got through."""

    def __init__(self) -> None:
        self.peers: list[int] = []
        self.release = asyncio.Event()

    async def __call__(self, channel: LinkStream) -> None:
        self.peers.append(channel.extra(LinkAttribute.peer_id))
        await channel.send(b"welcome")
        await self.release.wait()


@asynccontextmanager
async def guarded_listener(
    address: str, config: LinkConfig | None = None
) -> AsyncIterator[tuple[str, Recorder]]:
    recorder = Recorder()
    async with listen(address, config or make_config(2), recorder) as listener:
        yield listener.address, recorder
        recorder.release.set()


async def assert_still_serves(address: str, recorder: Recorder) -> None:
    """A correct peer still gets a working link after the bad one was dropped."""
    channel = await dial(address, make_config(5))
    try:
        assert await channel.receive() == b"welcome"
        assert recorder.peers[-1] == 5
    finally:
        await channel.aclose()


async def test_wrong_secret_is_refused_before_any_payload(
    address: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with guarded_listener(address) as (bound, recorder):
        with pytest.raises(AuthenticationError, match="cluster-secret") as info:
            await dial(bound, make_config(1, secret=b"not-the-cluster-secret"))
        assert info.value.field == "auth"
        with anyio.fail_after(5):  # the listener logged its refusal: it is done with the link
            while not any(  # noqa: ASYNC110 - polls the log
                "auth" in r.getMessage()
                for r in caplog.records
                if r.name.startswith("lazily_transports")
            ):
                await asyncio.sleep(0.01)
        assert recorder.peers == []
        await assert_still_serves(bound, recorder)


async def test_unauthenticated_links_need_both_sides_to_opt_in(address: str) -> None:
    open_config = make_config(1, secret=None, allow_unauthenticated=True)
    async with channel_pair(
        address, open_config, make_config(2, secret=None, allow_unauthenticated=True)
    ) as (client, server):
        assert client.extra(LinkAttribute.authenticated) is False
        assert server.extra(LinkAttribute.authenticated) is False
        await client.send(b"in the clear")
        assert await server.receive() == b"in the clear"
    async with guarded_listener(address) as (bound, recorder):
        with pytest.raises(HandshakeError) as info:
            await dial(bound, open_config)
        assert info.value.field == "auth"
        assert recorder.peers == []


@pytest.mark.parametrize(
    ("dialer", "field"),
    [
        ({"session_id": "another-cluster"}, "session_id"),
        ({"peer_id": 2}, "peer_id"),
        ({"required_features": frozenset({"queue-v9"})}, "features"),
    ],
)
async def test_incompatible_peers_fail_closed_naming_the_field(
    dialer: dict[str, object], field: str
) -> None:
    async with guarded_listener(unique_memory_address()) as (bound, recorder):
        config = make_config(**{"peer_id": 1, **dialer})  # type: ignore[arg-type]
        with pytest.raises((IncompatiblePeerError, PeerRejectedError)) as info:
            await dial(bound, config)
        assert info.value.field == field
        assert recorder.peers == []


async def test_the_accepting_side_tells_the_dialer_why(address: str) -> None:
    acceptor = make_config(2, required_features=frozenset({"queue-v9"}))
    async with guarded_listener(address, acceptor) as (bound, recorder):
        with pytest.raises(PeerRejectedError, match="queue-v9") as info:
            await dial(bound, make_config(1))
        assert info.value.field == "features"
        assert recorder.peers == []


async def test_dial_can_insist_on_the_peer_id() -> None:
    async with guarded_listener(unique_memory_address()) as (bound, _recorder):
        with pytest.raises(IncompatiblePeerError, match="expected peer 7"):
            await dial(bound, make_config(1), expect_peer_id=7)
        channel = await dial(bound, make_config(1), expect_peer_id=2)
        await channel.aclose()


async def _raw(address: str, config: LinkConfig) -> DataChannel:
    """A raw (unauthenticated) channel to ``address``: the attacker's view."""
    transport = DEFAULT_SCHEMES.transport(address.split(":", 1)[0])
    return await transport.connect(address, config)


def _hello(peer_id: int) -> bytes:
    handshake = Handshake.from_config(make_config(peer_id))
    return Hello(handshake, b"A" * 32, "hmac-sha256").encode()


async def test_replayed_handshake_and_proof_are_refused(address: str) -> None:
    # Capture a legitimate dialer's hello and proof with a fake acceptor.
    captured: list[bytes] = []

    async def fake_acceptor(channel: DataChannel) -> None:
        captured.append(await channel.receive())
        await channel.send(_hello(2))
        captured.append(await channel.receive())

    transport = DEFAULT_SCHEMES.transport("memory")
    fake_address = unique_memory_address()
    fake_listener = await transport.listen(
        fake_address,
        make_config(2),
        lambda raw: asyncio.get_running_loop().create_task(fake_acceptor(raw)) and None,
    )
    try:
        with pytest.raises(HandshakeError):
            await dial(fake_address, make_config(1, handshake_timeout=0.5))
    finally:
        await fake_listener.aclose()
    assert len(captured) == 2 and "proof" in decode_message(captured[1])

    # Replay both frames against the real acceptor.
    async with guarded_listener(address) as (bound, recorder):
        attacker = await _raw(bound, make_config(1))
        await attacker.send(captured[0])
        Hello.decode(await attacker.receive())
        await attacker.send(captured[1])
        with pytest.raises(PeerRejectedError) as info:
            decode_message(await attacker.receive())
        assert info.value.field == "auth"
        await attacker.aclose()
        assert recorder.peers == []
        await assert_still_serves(bound, recorder)


@pytest.mark.parametrize("credential", [None, "web"], ids=["member", "client"])
async def test_a_stranger_gets_no_proof_of_the_acceptor(
    address: str, credential: str | None
) -> None:
    """The acceptor proves the secret (or a client's token) only to a dialer that proved
    it first: a stranger's hello, then a made-up proof, is answered by a refusal, never by
    an HMAC it could try guesses of the secret against offline."""
    tokens = {"web": b"token-of-the-web-tier"}
    config = make_config(2)
    recorder = Recorder()
    async with listen(address, config, recorder, credentials=tokens.get) as listener:
        attacker = await _raw(listener.address, make_config(1))
        handshake = Handshake.from_config(make_config(1, credential=credential))
        await attacker.send(Hello(handshake, b"A" * 32, "hmac-sha256").encode())
        Hello.decode(await attacker.receive())
        await attacker.send(encode_message({"proof": b"\0" * 32}))
        with pytest.raises(PeerRejectedError) as info:
            decode_message(await attacker.receive())
        assert info.value.field == "auth"
        with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await attacker.receive()
        assert recorder.peers == []
        recorder.release.set()


async def test_a_token_dialer_naming_a_certificate_grant_is_told_so(address: str) -> None:
    """The acceptor's refusal of the kind of credential reaches the dialer as it was
    said, not as a wrong token."""
    certificate_grants = {"web": lambda certificate: None}
    async with listen(address, make_config(2), Recorder(),
                      credentials=certificate_grants.get) as listener:
        with pytest.raises(PeerRejectedError, match="with a TLS client certificate, not a token"):
            await dial(listener.address, make_config(1, credential="web", secret=b"a-token"))


async def test_a_proof_reflected_to_its_dialer_is_refused() -> None:
    """A fake acceptor sending the dialer's own proof back fails the role check."""

    async def reflector(channel: DataChannel) -> None:
        await channel.receive()
        await channel.send(_hello(2))
        await channel.send(await channel.receive())  # the dialer's proof, sent back
        await anyio.sleep_forever()

    transport = DEFAULT_SCHEMES.transport("memory")
    address = unique_memory_address()
    tasks: list[asyncio.Task[None]] = []
    listener = await transport.listen(
        address, make_config(2),
        lambda raw: tasks.append(asyncio.get_running_loop().create_task(reflector(raw))))
    try:
        with pytest.raises(AuthenticationError, match="peer 2 failed the cluster-secret"):
            await dial(address, make_config(1))
    finally:
        for task in tasks:
            task.cancel()
        await listener.aclose()


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\xff" * 40, b"GET / HTTP/1.1\r\n\r\n", encode_message({"protocol_id": 5})],
    ids=["empty", "ff", "http", "mistyped"],
)
async def test_garbage_handshake_closes_only_that_link(
    garbage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with guarded_listener(unique_memory_address()) as (bound, recorder):
        attacker = await _raw(bound, make_config(1))
        await attacker.send(garbage)
        Hello.decode(await attacker.receive())
        with pytest.raises(PeerRejectedError):
            decode_message(await attacker.receive())
        with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await attacker.receive()
        assert any(r.name == "lazily_transports.handshake" for r in caplog.records)
        assert recorder.peers == []
        await assert_still_serves(bound, recorder)


async def test_silent_peer_is_dropped_after_the_handshake_timeout(
    address: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    config = make_config(2, handshake_timeout=0.3)
    async with guarded_listener(address, config) as (bound, recorder):
        attacker = await _raw(bound, make_config(1))
        Hello.decode(await attacker.receive())
        with anyio.fail_after(5), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await attacker.receive()
        assert any("0.3 s" in r.getMessage() for r in caplog.records)
        assert recorder.peers == []
        await assert_still_serves(bound, recorder)
        await attacker.aclose()


async def test_dialer_gives_up_on_a_mute_acceptor() -> None:
    transport = DEFAULT_SCHEMES.transport("memory")
    address = unique_memory_address()
    held: list[DataChannel] = []
    listener = await transport.listen(address, make_config(2), held.append)
    try:
        with pytest.raises(HandshakeTimeoutError, match=r"0\.2 s"):
            await dial(address, make_config(1, handshake_timeout=0.2))
    finally:
        await listener.aclose()


async def test_establish_on_raw_channels_directly() -> None:
    transport = DEFAULT_SCHEMES.transport("memory")
    address = unique_memory_address()
    accepted: asyncio.Queue[DataChannel] = asyncio.Queue()
    listener = await transport.listen(address, make_config(2), accepted.put_nowait)
    try:
        raw_client = await transport.connect(address, make_config(1))
        raw_server = await accepted.get()
        client, server = await asyncio.gather(
            establish(raw_client, make_config(1), initiator=True),
            establish(raw_server, make_config(2), initiator=False),
        )
        assert isinstance(client, LinkStream) and client.channel is raw_client
        assert (client.extra(LinkAttribute.peer_id), server.extra(LinkAttribute.peer_id)) == (2, 1)
        assert server.extra(LinkAttribute.epoch) >= 1
    finally:
        await listener.aclose()


async def test_too_many_pending_handshakes_are_shed() -> None:
    config = make_config(2, handshake_timeout=5, max_pending_handshakes=1)
    async with guarded_listener(unique_memory_address(), config) as (bound, recorder):
        first = await _raw(bound, make_config(1))
        Hello.decode(await first.receive())  # its handshake is now pending
        second = await _raw(bound, make_config(3))
        with anyio.fail_after(1), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await second.receive()
        await first.aclose()
        assert recorder.peers == []


def _bomb_hello(depth: int) -> bytes:
    """A real hello plus one entry whose key is a shared-reference DAG of lists.

    A plain CBOR decoder makes the key a tuple whose hash costs 2**depth steps (depth 29
    is ~200 bytes and stalled the event loop for seconds; 64 never ends).
    """
    node: list[object] = ["x"]
    for _ in range(depth):
        node = [node, node]
    fields = decode_message(_hello(1))
    body = b"".join(cbor2.dumps(key) + cbor2.dumps(value) for key, value in fields.items())
    head = bytes([0xA0 | (len(fields) + 1)])
    return head + cbor2.dumps(node, value_sharing=True) + b"\x01" + body


@pytest.mark.parametrize("depth", [6, 64])
async def test_bomb_hello_is_refused_before_authentication_and_the_listener_goes_on(
    depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    async with guarded_listener(unique_memory_address()) as (bound, recorder):
        attacker = await _raw(bound, make_config(1))
        await attacker.send(_bomb_hello(depth))
        Hello.decode(await attacker.receive())
        with pytest.raises(PeerRejectedError) as info:
            decode_message(await attacker.receive())
        assert info.value.field == "handshake"
        assert "tag 28" in info.value.message or "depth" in info.value.message
        with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await attacker.receive()
        assert recorder.peers == []
        await assert_still_serves(bound, recorder)
