"""Client links: a dialer that names a credential proves its own token, never the
cluster secret, and is handed to the client handler, never to a peer link."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from lazily_transports import (
    AuthenticationError,
    IncompatiblePeerError,
    LinkAttribute,
    LinkConfig,
    LinkStream,
    Mesh,
    PeerRejectedError,
    dial,
    listen,
)
from transport_helpers import SECRET, make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)

TOKENS = {"web": b"token-of-the-web-tier"}


def client_config(name: str = "web", token: bytes = TOKENS["web"], **kw: object) -> LinkConfig:
    return LinkConfig(peer_id=0, session_id="any", secret=token, credential=name,
                      handshake_timeout=2.0, **kw)  # type: ignore[arg-type]


async def test_a_client_proves_its_token_and_is_named_on_both_ends(address: str) -> None:
    seen: asyncio.Queue[tuple[str | None, int]] = asyncio.Queue()

    async def handler(stream: LinkStream) -> None:
        await seen.put((stream.extra(LinkAttribute.credential),
                        stream.extra(LinkAttribute.max_frame_size)))
        await stream.send(b"hello client")
        await anyio.sleep_forever()

    acceptor = make_config(2, client_max_frame_size=4096)
    async with listen(address, acceptor, handler, credentials=TOKENS.get) as listener:
        stream = await dial(listener.address, client_config())
        try:
            assert await stream.receive() == b"hello client"
            assert stream.extra(LinkAttribute.credential) == "web"
            assert stream.extra(LinkAttribute.authenticated) is True
            # the session name is not checked for a client, its frames are capped
            assert await seen.get() == ("web", 4096)
        finally:
            await stream.aclose()
        # a peer still links with the cluster secret and is no client
        peer = await dial(listener.address, make_config(1))
        try:
            assert peer.extra(LinkAttribute.credential) is None
            assert (await seen.get())[0] is None
        finally:
            await peer.aclose()


async def test_unknown_client_wrong_token_and_a_listener_without_clients() -> None:
    async def handler(stream: LinkStream) -> None:
        raise AssertionError("no refused link may reach the handler")

    address = unique_memory_address()
    async with listen(address, make_config(2), handler, credentials=TOKENS.get) as listener:
        with pytest.raises(PeerRejectedError, match="unknown client credential 'nobody'") as info:
            await dial(listener.address, client_config("nobody"))
        assert info.value.field == "credential"
        with pytest.raises(AuthenticationError, match="wrong token"):
            await dial(listener.address, client_config(token=b"guessed"))
        # the cluster secret is not a client token either
        with pytest.raises(AuthenticationError, match="wrong token"):
            await dial(listener.address, client_config(token=SECRET))
    async with listen(unique_memory_address(), make_config(2), handler) as listener:
        with pytest.raises(PeerRejectedError, match="does not accept clients"):
            await dial(listener.address, client_config())


async def test_an_acceptor_announcing_a_credential_is_refused_by_the_dialer() -> None:
    async def handler(stream: LinkStream) -> None:
        await anyio.sleep_forever()

    address = unique_memory_address()
    async with listen(address, client_config("member"), handler) as listener:
        with pytest.raises(IncompatiblePeerError, match="acceptor announced a credential"):
            await dial(listener.address, make_config(1))


async def test_a_mesh_hands_clients_to_its_client_handler_never_to_a_peer_link() -> None:
    clients: asyncio.Queue[LinkStream] = asyncio.Queue()

    async def serve_client(stream: LinkStream) -> None:
        await clients.put(stream)
        async for frame in stream:
            await stream.send(b"client said " + frame)

    address = unique_memory_address()
    mesh = Mesh(make_config(2), address, {1: unique_memory_address()},
                clients=(TOKENS.get, serve_client), probe_after=None)
    async with mesh:
        stream = await dial(address, client_config())
        try:
            await stream.send(b"append_entries?")
            assert await stream.receive() == b"client said append_entries?"
            assert (await clients.get()).extra(LinkAttribute.credential) == "web"
            assert not mesh.is_up(1)
            assert mesh.counters(1).frames_received == 0
        finally:
            await stream.aclose()


async def test_a_client_proves_either_of_two_tokens_while_one_replaces_the_other() -> None:
    linked: list[tuple[str | None, int | None]] = []

    async def handler(stream: LinkStream) -> None:
        linked.append((stream.extra(LinkAttribute.credential),
                       stream.extra(LinkAttribute.credential_token)))
        await stream.send(b"hello client")
        await anyio.sleep_forever()

    new, old = b"the-new-token-of-web", TOKENS["web"]

    def lookup(name: str) -> tuple[bytes, ...] | None:
        return (new, old) if name == "web" else None

    async with listen(unique_memory_address(), make_config(2), handler,
                      credentials=lookup) as listener:
        for token in (new, old):  # the acceptor's own proof is made with the token used
            stream = await dial(listener.address, client_config(token=token))
            try:
                assert await stream.receive() == b"hello client"
            finally:
                await stream.aclose()
        with pytest.raises(AuthenticationError, match="wrong token"):
            await dial(listener.address, client_config(token=b"neither-of-the-two"))
    assert linked == [("web", 0), ("web", 1)]  # which of the two each proved
