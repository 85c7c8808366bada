"""The link handshake against a peer of the previous release, whose two sides sent their
proofs at once (the acceptor did not wait for the dialer's): links form either way round,
and a wrong secret is refused either way round with nothing delivered."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import pytest
from lazily_transports import DataChannel, HandshakeError, LinkStream, dial, listen
from lazily_transports._core import _authentication
from lazily_transports._core._handshake import decode_message, encode_message
from transport_helpers import address_for, make_config

pytestmark = pytest.mark.timeout(30)

SIDES = ["previous-dials", "previous-accepts"]

Authenticate = Callable[..., Coroutine[Any, Any, Any]]
CURRENT: Authenticate = _authentication._authenticate


async def previous_release(
    channel: DataChannel, secret: bytes, initiator: bool, hello: bytes, remote_frame: bytes,
    label: bytes, peer_id: int,
) -> None:
    """The previous release's mutual proof: each side sends its proof, then checks the
    peer's."""
    dialer_hello, acceptor_hello = (hello, remote_frame) if initiator else (remote_frame, hello)
    ours, theirs = (b"dialer", b"acceptor") if initiator else (b"acceptor", b"dialer")
    proof_of = _authentication._proof
    await channel.send(encode_message(
        {"proof": proof_of(secret, ours, dialer_hello, acceptor_hello, label)}))
    reply = decode_message(await channel.receive())
    proof = reply.get("proof")
    expected = proof_of(secret, theirs, dialer_hello, acceptor_hello, label)
    if not isinstance(proof, bytes) or not hmac.compare_digest(proof, expected):
        await _authentication._refuse(channel, "auth", "authentication failed")
        raise _authentication._failed(label, peer_id)


def one_side_previous(previous_dials: bool) -> Authenticate:
    """The handshake of this process: the previous release's on the dialing side
    (``previous_dials``) or on the accepting side, this release's on the other."""

    async def either(channel: DataChannel, secret: bytes, initiator: bool, *rest: Any) -> None:
        chosen = previous_release if initiator == previous_dials else CURRENT
        await chosen(channel, secret, initiator, *rest)

    return either


@asynccontextmanager
async def acceptor(address: str) -> AsyncIterator[tuple[str, list[int]]]:
    linked: list[int] = []
    done = asyncio.Event()

    async def serve(channel: LinkStream) -> None:
        linked.append(1)
        assert await channel.receive() == b"hello from the dialer"
        await channel.send(b"hello from the acceptor")
        await done.wait()

    async with listen(address, make_config(2), serve) as listener:
        yield listener.address, linked
        done.set()


@pytest.mark.parametrize("previous_dials", [True, False], ids=SIDES)
@pytest.mark.parametrize("kind", ["memory", "tcp"])
async def test_links_form_with_the_previous_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, kind: str, previous_dials: bool,
) -> None:
    monkeypatch.setattr(_authentication, "_authenticate", one_side_previous(previous_dials))
    async with acceptor(address_for(kind, tmp_path)) as (bound, linked):
        channel = await dial(bound, make_config(1))
        try:
            await channel.send(b"hello from the dialer")
            assert await channel.receive() == b"hello from the acceptor"
        finally:
            await channel.aclose()
        assert linked == [1]


@pytest.mark.parametrize("previous_dials", [True, False], ids=SIDES)
async def test_a_wrong_secret_is_refused_with_the_previous_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, previous_dials: bool,
) -> None:
    monkeypatch.setattr(_authentication, "_authenticate", one_side_previous(previous_dials))
    async with acceptor(address_for("memory", tmp_path)) as (bound, _linked):
        with pytest.raises(HandshakeError) as info:
            await dial(bound, make_config(1, secret=b"not-the-cluster-secret"))
        assert info.value.field == "auth"

