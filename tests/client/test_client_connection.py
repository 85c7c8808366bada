"""A member's client connection and a client's link hand their frames to the
connection as soon as a batch is encoded, not later in the loop iteration."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from lazily_queue.client import protocol as P
from lazily_queue.client.access import ClientGrant
from lazily_queue.client.connection import ClientConnection
from lazily_queue.client.link import Link
from lazily_queue.client.outbox import AT_ONCE, AnswerBudget


class _Stream:
    """Records what a link does with it; answers as a buffering socket channel does."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.channel = self  # its own raw channel: bytes received, for the idle sweep
        self.received_bytes = 0
        self.remote_address = "unix:///recorded#peer"
        self.accepted_bytes = 0
        self.sent_bytes = None  # cannot tell what is still held

    def send_nowait(self, data: bytes) -> None:
        self.calls.append(("queued", P.decode(data, max_bytes=1 << 20)))

    async def send(self, data: bytes) -> None:
        self.send_nowait(data)

    def flush(self) -> None:
        self.calls.append(("flushed", None))

    def set_receive_hook(self, hook: Any) -> bool:
        return False  # frames are read by the link's reader

    async def aclose(self) -> None:
        self.calls.append(("closed", None))

    def abort(self) -> None:
        self.calls.append(("closed", None))


async def test_a_batch_of_answers_reaches_the_connection_in_the_callback_that_encodes_it(
) -> None:
    stream = _Stream()
    conn = ClientConnection(stream,  # type: ignore[arg-type]
                            ClientGrant("web", b"a-token-of-web", produce=["*"]), 8)
    conn.send([5, P.OK, [0, None]])
    conn.send([6, P.OK, [0, None]])
    assert stream.calls == []  # the answers of one loop turn leave together ...
    await asyncio.sleep(0)
    # ... and are handed over at once: the commit index a member sends its followers
    # next must not go first.
    assert stream.calls == [("queued", [0, P.BATCH, [[5, P.OK, [0, None]],
                                                     [6, P.OK, [0, None]]]]),
                            ("flushed", None)]
    conn.close()
    await conn.outbox.wait_closed()


def _conn(stream: _Stream, in_flight: int) -> ClientConnection:
    conn = ClientConnection(stream,  # type: ignore[arg-type]
                            ClientGrant("web", b"a-token-of-web", produce=["*"]), 8)
    conn.slots.free -= in_flight
    return conn


async def test_a_links_only_answer_in_flight_leaves_at_once() -> None:
    stream = _Stream()
    conn = _conn(stream, 1)
    conn.slots.give()
    conn.send_answer([5, P.OK, [0, None]])
    assert stream.calls == [("queued", [5, P.OK, [0, None]]), ("flushed", None)]
    await asyncio.sleep(0)
    assert len(stream.calls) == 2  # nothing sent twice


async def test_light_links_answered_in_one_iteration_send_a_few_at_once() -> None:
    """Many links each with its only request answered in one step: a few answers leave at
    once, the rest at the iteration's end (after the step's Raft messages)."""
    budget = AnswerBudget(1 << 20)
    streams = [_Stream() for _ in range(AT_ONCE + 2)]
    conns = []
    for stream in streams:
        conn = ClientConnection(stream,  # type: ignore[arg-type]
                                ClientGrant("web", b"a-token-of-web", produce=["*"]), 8,
                                answers=budget)
        conn.slots.free -= 1
        conn.slots.give()
        conn.send_answer([5, P.OK, [0, None]])
        conns.append(conn)
    assert [bool(stream.calls) for stream in streams] == [True] * AT_ONCE + [False] * 2
    await asyncio.sleep(0)
    assert all(stream.calls == [("queued", [5, P.OK, [0, None]]), ("flushed", None)]
               for stream in streams)
    conns[0].slots.free -= 1  # the next iteration sends at once again
    conns[0].slots.give()
    conns[0].send_answer([6, P.OK, [0, None]])
    assert streams[0].calls[-2:] == [("queued", [6, P.OK, [0, None]]), ("flushed", None)]


async def test_answers_with_others_queued_in_the_loop_turn_leave_together_after_it() -> None:
    stream = _Stream()
    conn = _conn(stream, 2)
    for rid in (5, 6):  # the second is the last in flight, after the first was queued
        conn.slots.give()
        conn.send_answer([rid, P.OK, [0, None]])
    stream_after_notice = _Stream()
    noticed = _conn(stream_after_notice, 1)
    noticed.send([0, P.REPLAY, []])
    noticed.slots.give()
    noticed.send_answer([7, P.OK, [0, None]])
    assert stream.calls == stream_after_notice.calls == []
    await asyncio.sleep(0)
    assert stream.calls == [("queued", [0, P.BATCH, [[5, P.OK, [0, None]],
                                                     [6, P.OK, [0, None]]]]),
                            ("flushed", None)]
    assert stream_after_notice.calls == [
        ("queued", [0, P.BATCH, [[0, P.REPLAY, []], [7, P.OK, [0, None]]]]), ("flushed", None)]


async def test_a_client_hands_its_requests_to_the_connection_at_once() -> None:
    stream = _Stream()
    link = Link(stream, "unix:///nowhere", on_notice=lambda _kind, _payload: None)  # type: ignore[arg-type]
    link.request([P.PING], lambda _answer: None)
    link.request([P.PING], lambda _answer: None)
    await asyncio.sleep(0)
    assert [kind for kind, _ in stream.calls] == ["queued", "flushed"]
    assert len(stream.calls[0][1][2]) == 2  # one batch of both requests
    link.close("done")
    await link.outbox.wait_closed()


class _EndedStream(_Stream):
    """A stream whose member has closed it."""

    async def receive(self) -> bytes:
        raise anyio.EndOfStream


async def test_a_request_made_on_a_link_that_ended_is_answered_none() -> None:
    """A caller holding a link whose run has ended (its client has not yet let go of it)
    gets ``None`` for a new request, as for the requests unanswered when it ended, and
    tries again elsewhere instead of waiting for an answer that cannot come."""
    link = Link(_EndedStream(), "unix:///nowhere",  # type: ignore[arg-type]
                on_notice=lambda _kind, _payload: None)
    unanswered = link.ask([P.PING])
    await link.run(ping_interval=5, ping_timeout=10)
    assert await unanswered is None
    assert link.ended
    answers: list[Any] = []
    link.request([P.PING], answers.append)
    link.send_op(1, 0, 1, b"\x80", 1000, answers.append)
    assert link._batch == []  # nothing encoded for a link that cannot send it
    async with asyncio.timeout(5):
        assert await link.ask([P.BARRIER, 1000]) is None
    assert answers == [None, None]
