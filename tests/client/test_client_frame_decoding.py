"""A member decodes a client's large request frames off its event loop: a megabyte of
decimals took a third of a second to decode, in which a leader sent no heartbeat (its
followers elected another). Frames of one link are still handled in order. A frame holds
at most one tagged value per :data:`TAGGED_BYTES` bytes of the member's limit: cbor2
builds datetimes, dates, UUIDs and sets without calling back, a megabyte of them holding
the loop for a fifth of a second even on the decoding thread."""

from __future__ import annotations

import asyncio
import random
import threading
from decimal import Decimal
from typing import Any

import cbor2
import pytest

from lazily_queue import RequestRefused, connect
from lazily_queue.client import protocol as P
from lazily_queue.client.frame_decoding import (
    NESTED_BYTES,
    TAGGED_BYTES,
    THREAD_BYTES,
    FrameDecoder,
    containers_over,
    request_limit,
)
from lazily_queue.client.link import BATCH_BYTES
from lazily_queue.client.op_shapes import TAKE_CONTAINERS
from lazily_queue.raft.batch import DEFAULT_MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES_LIMIT
from lazily_queue.raft.values import CONTAINER_BYTES
from lazily_queue.replicated import ops
from tests.client.one_member import TOKEN, answers, linked, one_member

pytestmark = pytest.mark.timeout(60)


async def test_a_large_frame_is_decoded_off_the_loop_and_answered_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[tuple[int, bool]] = []
    decode = P.decode

    def recording(data: bytes, **limits: Any) -> list[Any]:
        threads.append((len(data), threading.current_thread() is threading.main_thread()))
        return decode(data, **limits)

    monkeypatch.setattr(P, "decode", recording)
    async with one_member() as node:
        stream = await linked(node)  # its session named in its hello
        large = cbor2.dumps([3, P.PING, [Decimal("1.5")] * (THREAD_BYTES // 2)])
        await stream.send(large)
        await stream.send(cbor2.dumps([4, P.OP, 1, 1, ops.QUEUE_DECLARE, ["q", None], 5000]))
        await stream.send(large[:-100])  # unreadable: refused as one frame
        got = await answers(stream, 3)
        # refused unread, yet answered as the request its first bytes name
        assert [a[:2] for a in got] == [[3, P.OK], [4, P.OK], [3, P.ERROR]], got
        assert "unreadable frame" in got[2][2][1]
    assert [(size >= THREAD_BYTES, main) for size, main in threads[-3:]] == [
        (True, False), (False, True), (True, False)]


@pytest.mark.parametrize("message_limit", [1024, 300_000, DEFAULT_MAX_MESSAGE_BYTES,
                                           MAX_MESSAGE_BYTES_LIMIT])
def test_the_tag_budget_holds_every_op_a_member_admits_and_a_clients_batch(
        message_limit: int) -> None:
    """An op holds at most one counted value per CONTAINER_BYTES of the message limit (a
    give-back a take's besides); a client's batch of frames is at most BATCH_BYTES, each
    tagged value two bytes at the least."""
    decoder = FrameDecoder(request_limit(message_limit), "budget")
    assert decoder.max_tags == decoder.max_bytes // TAGGED_BYTES
    assert decoder.max_tags >= message_limit // CONTAINER_BYTES + TAKE_CONTAINERS
    assert decoder.max_tags >= BATCH_BYTES // 2


async def test_a_frame_past_the_tag_budget_is_refused_naming_the_tag_and_the_limit() -> None:
    async with one_member() as node:
        assert node.clients is not None
        most = node.clients.decoder.max_tags
        stream = await linked(node)
        epoch = cbor2.CBORTag(1, 1)  # built by cbor2 alone: no hook of ours sees it
        await stream.send(cbor2.dumps([3, P.PING, [epoch] * most]))
        await stream.send(cbor2.dumps([4, P.PING, [epoch] * (most + 1)]))
        await stream.send(cbor2.dumps([5, P.PING, [{"a"}] * (most // 2), [epoch] * most]))
        got = await answers(stream, 3)
        assert got[0] == [3, P.OK, None]
        for rid, answer in zip((4, 5), got[1:], strict=True):
            assert answer[:2] == [rid, P.ERROR], answer
        assert got[1][2][1].startswith(
            f"unreadable frame: more than {most:,} tagged values (tag 1 (epoch datetime) is "
            "one too many)"), got[1]
        assert "tag 1 (epoch datetime) is one too many" in got[2][2][1]


async def test_a_frame_of_many_bignums_is_refused_past_the_tag_budget() -> None:
    """A bignum over 64 bits counts once per 8 bytes of its magnitude: a frame of 9-byte
    ones (73 ms of CPU a megabyte, each built by a hook) holds half the budget of them."""
    async with one_member() as node:
        assert node.clients is not None
        most = node.clients.decoder.max_tags
        stream = await linked(node)
        await stream.send(cbor2.dumps([3, P.PING, [2**64] * (most // 2)]))
        await stream.send(cbor2.dumps([4, P.PING, [2**64] * (most // 2 + 1)]))
        got = await answers(stream, 2)
        assert got[0] == [3, P.OK, None]
        assert got[1][:2] == [4, P.ERROR], got[1]
        assert got[1][2][1].startswith(
            f"unreadable frame: more than {most:,} tagged values (tag 2 (bignum), counted "
            "once per 8 bytes, is one too many)"), got[1]


@pytest.mark.parametrize("message_limit", [1024, 300_000, DEFAULT_MAX_MESSAGE_BYTES,
                                           MAX_MESSAGE_BYTES_LIMIT])
def test_the_container_budget_holds_every_op_a_member_admits_and_a_clients_batch(
        message_limit: int) -> None:
    """An op holds at most one container per CONTAINER_BYTES of the message limit (a
    give-back a take's besides; its request, its arguments and the frame a few more); a
    client's batch of several frames is at most BATCH_BYTES, each container a byte at the
    least and each request's id and kind not one."""
    decoder = FrameDecoder(request_limit(message_limit), "budget")
    assert decoder.max_containers == decoder.max_bytes // NESTED_BYTES
    assert decoder.max_containers >= message_limit // CONTAINER_BYTES + TAKE_CONTAINERS + 4
    assert decoder.max_containers >= BATCH_BYTES


async def test_a_frame_past_the_container_budget_is_refused_naming_the_limit() -> None:
    """Empty arrays and maps, flat or nested: cbor2 builds them without calling back, so
    they are counted before the frame is decoded."""
    async with one_member() as node:
        assert node.clients is not None
        most = node.clients.decoder.max_containers
        stream = await linked(node)
        await stream.send(cbor2.dumps([3, P.PING, [[]] * (most - 2)]))
        await stream.send(cbor2.dumps([4, P.PING, [[]] * (most - 1)]))
        await stream.send(cbor2.dumps([5, P.PING, [{}] * most]))
        chain: list[Any] = []
        for _ in range(50):
            chain = [chain]
        await stream.send(cbor2.dumps([6, P.PING, [chain] * (most // 51 + 1)]))
        got = await answers(stream, 4)
        assert got[0] == [3, P.OK, None]
        for rid, answer in zip((4, 5, 6), got[1:], strict=True):
            assert answer[:2] == [rid, P.ERROR], answer
            assert answer[2][1].startswith(
                f"unreadable frame: more than {most:,} arrays and maps (one per "
                f"{NESTED_BYTES} bytes of the {node.clients.decoder.max_bytes}-byte request "
                "limit)"), answer


def _containers(value: Any) -> int:
    if isinstance(value, list):
        return 1 + sum(_containers(item) for item in value)
    if isinstance(value, dict):
        return 1 + sum(_containers(key) + _containers(item) for key, item in value.items())
    if isinstance(value, cbor2.CBORTag):
        return _containers(value.value)
    return 0


def test_counting_containers_agrees_with_the_decoded_value() -> None:
    """Whether the head bytes alone settle it (few of them) or the heads are walked
    (strings holding such bytes, floats, ints, tags), the count is the value's."""
    rng = random.Random(5)

    def value(depth: int = 0) -> Any:
        r = rng.random()
        if depth > 5 or r < 0.4:
            return rng.choice([rng.randrange(-2**70, 2**70), rng.random(), "é" * rng.randrange(30),
                               rng.randbytes(rng.randrange(40)), None, True, rng.randrange(300)])
        if r < 0.7:
            return [value(depth + 1) for _ in range(rng.randrange(6))]
        if r < 0.85:
            return {str(rng.randrange(99)): value(depth + 1) for _ in range(rng.randrange(4))}
        return cbor2.CBORTag(1, rng.randrange(10**9))

    walked = 0
    for _ in range(2000):
        v = [value() for _ in range(rng.randrange(1, 30))]
        data = cbor2.dumps(v)
        n = _containers(v)
        heads = sum(0x80 <= b < 0xC0 for b in data)
        for most in {max(0, n - 1), n, n + 1}:
            assert containers_over(data, most) == (n > most), (v, most)
            walked += heads > most
    assert walked > 1000  # the walk ran, not only the count of head bytes


async def test_a_clients_large_frame_waits_for_one_frame_of_each_other_client_not_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One client's links flooding the decoding thread with large frames (a fifth of a
    second each) kept another client's large frame waiting for all of them, past its
    timeout; the waiting frames go by client in turn."""
    order: list[bytes] = []
    release = threading.Event()

    def decode(data: bytes, **limits: Any) -> list[Any]:
        release.wait(10)
        order.append(data[:1])
        if data[:1] == b"x":
            raise P.RequestRefused("unreadable frame: crafted")
        return [0, P.PING, data[:1]]

    monkeypatch.setattr(P, "decode", decode)
    decoder = FrameDecoder(request_limit(DEFAULT_MAX_MESSAGE_BYTES), "turns")
    try:
        def frame(kind: bytes, client: str) -> asyncio.Task[Any]:
            return asyncio.ensure_future(decoder.decode(kind * THREAD_BYTES, client))

        running = frame(b"a", "flood")
        await asyncio.sleep(0.05)  # on the thread, held there
        floods = [frame(b"a", "flood") for _ in range(8)]
        gone = frame(b"c", "other")  # its link closed while it waited
        honest = frame(b"b", "honest")
        refused = frame(b"x", "honest")
        await asyncio.sleep(0)
        gone.cancel()
        release.set()
        got = await asyncio.gather(running, *floods, honest, refused)
    finally:
        decoder.close()
    assert order.index(b"b") <= 2, order
    assert b"c" not in order and len(order) == 11, order
    assert got[-2] == [0, P.PING, b"b"] and isinstance(got[-1], P.RequestRefused)


async def test_a_clients_op_past_the_container_budget_fails_at_once_not_at_its_timeout(
        ) -> None:
    """The member refuses the frame unread, but answers the request its first bytes name,
    so the op fails with the cause (nothing applied) rather than waiting out its timeout,
    and the client goes on."""
    async with one_member() as node:
        assert node.clients is not None and node.listen is not None
        most = node.clients.decoder.max_containers
        async with connect([node.listen], ("web", TOKEN), op_timeout=30) as client:
            jobs = client.queue("jobs")
            # refused for what it holds, not failed at its timeout (unknown outcome)
            with pytest.raises(RequestRefused, match="arrays and maps") as info:
                await jobs.push([[]] * (most + 1))
            assert "nothing in it was applied" in str(info.value)
            await jobs.push("after")
            assert node.queue("jobs").len() == 1


@pytest.mark.parametrize(("data", "rid"), [
    (cbor2.dumps([3, P.OP, "x"]), 3),
    (cbor2.dumps([300, P.PING]), 300),
    (cbor2.dumps([2**40, P.PING]), 2**40),
    (cbor2.dumps([7, P.OP, *range(30)]), 7),  # an array with a one-byte length
    (cbor2.dumps([0, P.BATCH, [[1, P.PING]]]), 0),  # a batch: no one request
    (cbor2.dumps([5]), 0), (cbor2.dumps([-1, 2]), 0), (cbor2.dumps(["a", 1]), 0),
    (cbor2.dumps({"a": 1}), 0), (b"", 0), (b"\x82", 0), (b"\x82\x19\x01", 0),
])
def test_a_frames_request_id_is_read_from_its_first_bytes(data: bytes, rid: int) -> None:
    assert P.request_id(data) == rid
