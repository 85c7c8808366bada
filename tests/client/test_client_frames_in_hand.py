"""A client's links hold at most two request limits' worth of frames decoded at once: a
link waiting for room keeps its frame, and 63 links of one client each waiting behind a
state it does not read held a member at 2.4 GB. A frame past the bound waits undecoded;
another client is served meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, LinkStream, dial

from lazily_queue import ClientAccess, ClientGrant
from lazily_queue.client import protocol as P
from lazily_queue.client.frames_in_hand import IN_HAND_FRAMES, FramesInHand
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id
from tests.client.one_member import TOKEN, answers, client_stats, linked, one_member, until

pytestmark = pytest.mark.timeout(60)

#: A frame that waits on its link: it reads queue "big" twice, the second read waiting for
#: the first state to leave (the client never reads it), then carries a megabyte.
_STUCK = cbor2.dumps([0, P.BATCH, [[2, P.WATCH, "queue", "big"], [3, P.WATCH, "queue", "big"],
                                   [4, P.PING, b"x" * 1_000_000]]])


async def _unread_link(address: str, name: str, token: bytes) -> LinkStream:
    """A link of client ``name`` that sends its hello and the frame :data:`_STUCK` and
    reads nothing."""
    stream = await dial(address, LinkConfig(peer_id=0, session_id="x", secret=token,
                                            credential=name))
    await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id(name)]))
    await stream.send(_STUCK)
    return stream


async def test_one_clients_waiting_links_hold_two_frames_decoded_the_rest_wait_undecoded(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    decoded: list[int] = []
    decode = P.decode

    def recording(data: bytes, **limits: Any) -> list[Any]:
        if len(data) >= 1_000_000:
            decoded.append(len(data))
        return decode(data, **limits)

    monkeypatch.setattr(P, "decode", recording)
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"]),
                           ClientGrant("other", b"other-token", produce=["*"])])
    async with one_member(access) as node:
        assert node.clients is not None
        stream = await linked(node)
        await stream.send(cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_DECLARE, ["big", None], 5000]))
        for seq in range(2, 5):  # a state of 2.7 MB: more than the link's buffers
            await stream.send(cbor2.dumps([seq, P.OP, seq, seq, ops.QUEUE_PUSH,
                                           ["big", b"x" * 900_000], 5000]))
        assert [a[1] for a in await answers(stream, 4)] == [P.OK] * 4
        address = node.clients.addresses[0]
        stuck = [await _unread_link(address, "web", TOKEN) for _ in range(6)]
        # the third's frame waits, and the hellos of the three after it behind it
        await until(lambda: client_stats(node)["frames_waiting"] == 4
                    and len(decoded) >= IN_HAND_FRAMES)
        await asyncio.sleep(0.3)
        assert len(decoded) == IN_HAND_FRAMES  # not one per link: 6 frames, 16 MB of values
        assert node.clients.in_hand.held["web"] <= node.clients.in_hand.limit
        lines = [r.getMessage() for r in caplog.records if "waits undecoded" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith("client 'web': its links hold"), lines
        other = await dial(address, LinkConfig(peer_id=0, session_id="x",
                                               secret=b"other-token", credential="other"))
        await other.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id("other")]))
        await other.send(cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_PUSH, ["small", "hi"], 5000]))
        assert [a[:2] for a in await answers(other, 2)] == [[1, P.OK], [2, P.OK]]
        for link in stuck[2:]:  # ended while their frames wait: let go at once
            await link.aclose()
        await until(lambda: client_stats(node)["frames_waiting"] == 0)
        for link in stuck[:2]:  # the frames in hand served: room again
            await link.aclose()
        in_hand = node.clients.in_hand
        await until(lambda: "web" not in in_hand.held)


class _Conn:
    """What :class:`FramesInHand` reads of a client link."""

    def __init__(self, name: str) -> None:
        self.grant = ClientGrant(name, TOKEN, produce=["*"])
        self.blocked = False


async def _never() -> None:
    await asyncio.Event().wait()


async def test_frames_wait_in_order_and_one_is_always_taken_when_its_client_holds_none(
        ) -> None:
    hand = FramesInHand(100)
    web: Any = _Conn("web")
    other: Any = _Conn("other")
    assert await hand.take(web, 60, _never)
    second = asyncio.ensure_future(hand.take(web, 60, _never))
    third = asyncio.ensure_future(hand.take(web, 10, _never))  # fits, but comes after
    await asyncio.sleep(0)
    assert not second.done() and not third.done() and web.blocked and hand.waiting == 2
    assert await hand.take(other, 500, _never)  # another client's: alone, whatever its size
    hand.give("web", 60)
    assert await second and await third
    assert hand.held == {"web": 70, "other": 500}
    ended = asyncio.Event()

    async def link_ended() -> None:
        await ended.wait()

    gone = asyncio.ensure_future(hand.take(web, 50, link_ended))
    await asyncio.sleep(0)
    ended.set()
    assert await gone is False
    assert hand.waiting == 0 and hand.held["web"] == 70
    hand.give("web", 60)
    hand.give("web", 10)
    hand.give("other", 500)
    assert hand.held == {}
