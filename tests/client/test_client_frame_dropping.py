"""A client link that ends while its large frames wait for the member's decoding thread:
they are dropped undecoded, and the link's place under its client's ``max_links`` is
freed at once, not once the thread got to its frames."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import cbor2
import pytest

from lazily_queue import ClientAccess, ClientGrant
from lazily_queue.client import protocol as P
from lazily_queue.client.frame_decoding import THREAD_BYTES
from tests.client.one_member import TOKEN, answers, linked, one_member

pytestmark = pytest.mark.timeout(60)


async def test_an_ended_links_waiting_frames_are_dropped_and_its_place_freed_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    decoded: list[bytes] = []
    decode = P.decode

    def holding(data: bytes, **limits: Any) -> list[Any]:
        if data.endswith(b"HOLD"):
            release.wait(30)  # the thread is busy until the test says
        decoded.append(data[-4:])
        return decode(data, **limits)

    monkeypatch.setattr(P, "decode", holding)
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], max_links=2)])
    async with one_member(access) as node:
        assert node.clients is not None
        links = node.clients.links

        def large(rid: int, tail: bytes) -> bytes:
            return cbor2.dumps([rid, P.PING, b"p" * THREAD_BYTES + tail])

        holder = await linked(node)
        await holder.send(large(2, b"HOLD"))  # held on the thread
        gone = await linked(node)
        for rid in range(2, 10):  # one waits for the thread, the others behind it
            await gone.send(large(rid, b"GONE"))
        assert links.open["web"] == 2
        await gone.aclose()
        async with asyncio.timeout(10):  # the thread is still held: nothing decoded since
            while links.open["web"] == 2:  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.01)
        third = await linked(node)  # fits under max_links = 2 at once
        assert not release.is_set() and b"GONE" not in decoded
        release.set()
        assert [a[:2] for a in await answers(holder, 1)] == [[2, P.OK]]
        await third.send(cbor2.dumps([3, P.PING, None]))
        assert [a[:2] for a in await answers(third, 1)] == [[3, P.OK]]
        await holder.aclose()
        await third.aclose()
    assert decoded.count(b"HOLD") == 1 and b"GONE" not in decoded, decoded


async def test_an_ended_links_waiting_frame_is_let_go_at_once_not_at_its_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Links that each send one large frame and end while the thread is busy leave
    none of their bytes waiting for the thread (else a client's slow frames ahead of
    them and links churning behind held gigabytes)."""
    release = threading.Event()
    decode = P.decode

    def holding(data: bytes, **limits: Any) -> list[Any]:
        if data.endswith(b"HOLD"):
            release.wait(30)  # the thread is busy until the test says
        return decode(data, **limits)

    monkeypatch.setattr(P, "decode", holding)
    async with one_member() as node:
        assert node.clients is not None
        decoder, links = node.clients.decoder, node.clients.links
        holder = await linked(node)
        await holder.send(cbor2.dumps([2, P.PING, b"p" * THREAD_BYTES + b"HOLD"]))
        for _ in range(5):
            gone = await linked(node)
            await gone.send(cbor2.dumps([2, P.PING, b"g" * THREAD_BYTES]))
            await gone.aclose()
        async with asyncio.timeout(10):
            while links.open["web"] > 1:  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.01)
        assert not release.is_set()
        assert not decoder._waiting, {k: len(v) for k, v in decoder._waiting.items()}
        release.set()
        assert [a[:2] for a in await answers(holder, 1)] == [[2, P.OK]]
        await holder.aclose()
