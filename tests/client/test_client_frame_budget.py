"""A member's client links share one budget of bytes held in frames still arriving: a
frame that does not fit waits (its link read no further) for the frames before it,
in order; one frame larger than the budget is read alone; a frame waiting past the idle
timeout gets its link closed with a refusal naming ``client_frame_budget``."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import cbor2
import pytest
from lazily_transports import FrameBudget, LinkStream
from lazily_transports.sockets import SocketChannel

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    FrameBudgetFull,
    InvalidConfiguration,
    Node,
    connect,
)
from lazily_queue.client import protocol as P
from lazily_queue.client.frame_budget import FRAME_BUDGET
from lazily_queue.client.link import Link
from lazily_queue.config import ConfigError
from lazily_queue.replicated import ops
from tests.client.one_member import (
    TOKEN,
    client_stats,
    linked,
    one_member,
    unread_while_waiting,
    until,
    web_client_config,
)


def member(frame_budget: int) -> AbstractAsyncContextManager[Node]:
    return one_member(ClientAccess([ClientGrant("web", TOKEN, produce=["*"])],
                                   frame_budget=frame_budget))


def _push(size: int) -> bytes:
    """A whole push request of about ``size`` bytes, with its length prefix."""
    payload = cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", b"x" * size], 5000])
    return len(payload).to_bytes(4, "big") + payload


def _write(stream: LinkStream, data: bytes) -> None:
    channel = stream.channel
    assert isinstance(channel, SocketChannel) and channel._transport is not None
    channel._transport.write(data)


async def test_a_frame_that_does_not_fit_waits_for_the_frames_before_it() -> None:
    async with member(frame_budget=300_000) as node:
        first, second = await linked(node), await linked(node)
        wire_a, wire_b = _push(200_000), _push(150_000)
        _write(first, wire_a[:100_000])
        await until(lambda: client_stats(node)["frame_budget_held"] > 0)
        _write(second, wire_b[:50_000])
        await until(lambda: client_stats(node)["frame_budget_waiting"] == 1)
        _write(second, wire_b[50_000:])  # not read while it waits
        await until(lambda: unread_while_waiting(node) == len(wire_b) - 50_000)
        assert client_stats(node)["frame_budget_held"] == len(wire_a)
        assert client_stats(node)["frame_budget_waiting"] == 1
        _write(first, wire_a[100_000:])  # the first is whole: the second is read
        assert cbor2.loads(await first.receive())[:2] == [2, P.OK]
        assert cbor2.loads(await second.receive())[:2] == [2, P.OK]
        assert client_stats(node)["frame_budget_held"] == 0
        await first.aclose()
        await second.aclose()


async def test_a_frame_larger_than_the_budget_is_read_alone() -> None:
    async with member(frame_budget=100_000) as node:
        stream = await linked(node)
        wire = _push(250_000)
        for start in range(0, len(wire), 60_000):
            _write(stream, wire[start:start + 60_000])
            await asyncio.sleep(0.01)
        assert cbor2.loads(await stream.receive())[:2] == [2, P.OK]
        assert client_stats(node)["frame_budget_held"] == 0
        await stream.aclose()


async def test_a_frame_waiting_past_the_idle_timeout_is_refused_naming_the_setting() -> None:
    async with member(frame_budget=300_000) as node:
        assert node.clients is not None
        node.clients.idle.timeout = 0.5
        holder, waiter = await linked(node), await linked(node)
        _write(holder, _push(250_000)[:1000])

        async def trickle() -> None:  # the holder's bytes keep coming: it stays linked
            while True:
                await asyncio.sleep(0.05)
                _write(holder, b"x" * 200)

        task = asyncio.create_task(trickle())
        try:
            await until(lambda: client_stats(node)["frame_budget_held"] > 0)
            _write(waiter, _push(100_000)[:5000])
            frame = cbor2.loads(await asyncio.wait_for(waiter.receive(), 10))
        finally:
            task.cancel()
        assert frame[:2] == [0, P.ERROR] and frame[2][0] == FRAME_BUDGET, frame
        assert "client_frame_budget" in frame[2][1]
        assert frame[2][2] == 1  # it read the hello only: nothing of the push
        await until(lambda: client_stats(node)["frame_budget_waiting"] == 0)
        assert client_stats(node)["frame_budget_closed"] == 1
        await holder.aclose()
        await waiter.aclose()


class _Holder:
    def __init__(self) -> None:
        self.granted: list[int] = []

    def budget_granted(self, size: int) -> None:
        self.granted.append(size)


def test_waiting_frames_are_granted_in_order_so_a_large_one_is_not_passed_over() -> None:
    budget = FrameBudget(100)
    assert budget.reserve(_Holder(), 60)
    large, small = _Holder(), _Holder()
    assert not budget.reserve(large, 95)
    assert not budget.reserve(small, 10)  # it would fit, but the large one came first
    budget.release(60)
    assert large.granted == [95] and small.granted == []
    budget.release(95)
    assert small.granted == [10] and budget.held == 10


def test_a_budget_that_is_not_a_positive_int_is_refused() -> None:
    with pytest.raises(InvalidConfiguration, match="frame_budget"):
        ClientAccess([ClientGrant("web", TOKEN)], frame_budget=0)


async def test_a_client_whose_frames_find_no_room_raises_naming_the_setting() -> None:
    async with member(frame_budget=300_000) as node:
        assert node.clients is not None and node.listen is not None
        node.clients.idle.timeout = 1.0  # the holder's trickle outlives a loaded loop's stall
        holder = await linked(node)
        _write(holder, _push(250_000)[:1000])

        async def trickle() -> None:
            while True:
                await asyncio.sleep(0.05)
                _write(holder, b"x" * 200)

        task = asyncio.create_task(trickle())
        try:
            # op_timeout (not push's timeout, the wait for room): the client sends the
            # push again on each new link, refused each time, until the op's deadline.
            async with connect([node.listen], ("web", TOKEN), op_timeout=5) as client:
                with pytest.raises(FrameBudgetFull, match="client_frame_budget"):
                    await client.queue("jobs").push(b"y" * 600_000)
        finally:
            task.cancel()
        await holder.aclose()


class _Channel:
    """A connection that takes each frame whole at once: it leaves the process."""

    def __init__(self) -> None:
        self.accepted_bytes = 0
        self.frames = 0

    @property
    def sent_bytes(self) -> int:
        return self.accepted_bytes


class _Stream:
    def __init__(self) -> None:
        self.channel = _Channel()

    def send_nowait(self, data: bytes) -> None:
        self.channel.accepted_bytes += len(data)
        self.channel.frames += 1

    def flush(self) -> None:
        pass

    def abort(self) -> None:
        pass


@pytest.mark.parametrize(("refusal", "unread"), [
    ([FRAME_BUDGET, "refused", 2], [False, False, True, True]),
    ([FRAME_BUDGET, "refused"], [False] * 4),  # a member of an earlier version: not said
    # A count that is no frame number is not believed: every request may have been read.
    *(([FRAME_BUDGET, "refused", read], [False] * 4)
      for read in (-1, True, "2", 2.0, None, [2], {"read": 2})),
    ([FRAME_BUDGET, "refused", 2**70], [False] * 4),  # past the frames sent: all were read
    ([FRAME_BUDGET, {"not": "text"}, 0], [True] * 4),
])
async def test_a_budget_refusal_tells_the_client_which_requests_were_never_read(
        refusal: list[Any], unread: list[bool]) -> None:
    stream = _Stream()
    link = Link(stream, "unix:///member", on_notice=lambda kind, payload: None)  # type: ignore[arg-type]
    frames = []
    for _ in range(4):
        link.request([P.PING], lambda answer: None)
        frames.append(link.last_frame)
        await asyncio.sleep(0)  # each request leaves in its own frame
    assert stream.channel.frames == 4 and not any(link.holds(f) for f in frames)
    link._frame(P.encode([0, P.ERROR, refusal]))
    assert link.refusal_code == FRAME_BUDGET and not link.open
    assert [link.unread(f) for f in frames] == unread


def test_the_budget_is_read_from_the_configuration(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "node.toml"
    monkeypatch.setenv("LQ_WEB", TOKEN.decode())

    def loaded(top: str) -> Any:
        return web_client_config(config, top)

    assert loaded("client_frame_budget = 1000000").client_access().frame_budget == 1_000_000
    assert loaded("").client_access().frame_budget == 64 * 1024 * 1024
    for bad in ("0", '"64M"', "true"):
        with pytest.raises(ConfigError, match="client_frame_budget"):
            loaded(f"client_frame_budget = {bad}")
