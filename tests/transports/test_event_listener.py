"""An EventStream listener takes frames as they are queued: no task switch per frame."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest
from lazily_transports import (
    EventStream,
    Frame,
    Mesh,
    MeshEvent,
    PeerDown,
    PeerUp,
    UnknownPeerError,
)
from transport_helpers import make_config

pytestmark = pytest.mark.timeout(30)

FAST = {"backoff_initial": 0.01, "backoff_max": 0.1, "connect_timeout": 2.0}


async def test_the_listener_takes_frames_at_once_and_is_never_nested() -> None:
    events = EventStream(capacity=8)
    taken: list[MeshEvent] = []
    depth = 0

    def listener() -> None:
        nonlocal depth
        depth += 1
        assert depth == 1, "called from inside itself"
        while batch := events.take_nowait():
            for event in batch:
                taken.append(event)
                if isinstance(event, Frame) and event.data == b"1":
                    events.put_frame_nowait(Frame(1, 1, b"2"))  # caused by the frame
        depth -= 1

    events.set_listener(listener)
    events.put_control(PeerUp(1, 1))  # control events only wake readers
    assert taken == [] and len(events) == 1
    events.put_frame_nowait(Frame(1, 1, b"1"))
    assert [getattr(e, "data", None) for e in taken] == [None, b"1", b"2"]
    assert len(events) == 0 and not events.full
    reader = asyncio.create_task(events.receive_batch())
    await asyncio.sleep(0)
    events.put_frame_nowait(Frame(1, 1, b"3"))  # taken by the listener: no reader woken
    await asyncio.sleep(0)
    assert not reader.done()
    events.set_listener(None)
    events.put_control(PeerDown(1, 1, "bye"))
    assert await reader == [PeerDown(1, 1, "bye")]


async def test_frames_over_a_unix_link_reach_the_listener_in_order(short_tmp: Path) -> None:
    addresses = {1: f"unix://{short_tmp}/a.sock", 2: f"unix://{short_tmp}/b.sock"}
    got: list[bytes] = []
    tasks: set[object] = set()
    all_in = asyncio.Event()
    async with Mesh(make_config(1), addresses[1], {2: addresses[2]}, **FAST) as a, \
            Mesh(make_config(2), addresses[2], {1: addresses[1]}, **FAST) as b:
        def listener() -> None:
            tasks.add(asyncio.current_task())
            for event in b.events.take_nowait():
                if isinstance(event, Frame):
                    got.append(event.data)
            if len(got) >= 500:
                all_in.set()

        with anyio.fail_after(5):
            while not isinstance(await a.events.receive(), PeerUp):
                pass
            while not isinstance(await b.events.receive(), PeerUp):
                pass
        b.events.set_listener(listener)
        for i in range(500):
            assert a.send_nowait(2, b"f%d" % i)
            if i % 50 == 0:
                a.flush()
        a.flush()
        with anyio.fail_after(5):
            await all_in.wait()
        assert got == [b"f%d" % i for i in range(500)]
        assert len(b.events) == 0 and b.counters(1).frames_received == 500
        assert tasks == {None}  # called from the socket's callback, not from a task


async def test_held_frames_leave_with_the_meshs_flush(short_tmp: Path) -> None:
    addresses = {1: f"unix://{short_tmp}/a.sock", 2: f"unix://{short_tmp}/b.sock"}
    async with Mesh(make_config(1), addresses[1], {2: addresses[2]}, **FAST) as a, \
            Mesh(make_config(2), addresses[2], {1: addresses[1]}, **FAST) as b:
        with pytest.raises(UnknownPeerError):
            a.send_held(3, b"nobody")
        with anyio.fail_after(5):
            while not isinstance(await a.events.receive(), PeerUp):
                pass
            while not isinstance(await b.events.receive(), PeerUp):
                pass
        assert a.send_held(2, b"one") and a.send_held(2, b"two")
        await asyncio.sleep(0.05)
        assert len(b.events) == 0  # held: nothing written without a flush
        a.flush()
        with anyio.fail_after(5):
            got = [await b.events.receive(), await b.events.receive()]
        assert [e.data for e in got if isinstance(e, Frame)] == [b"one", b"two"]
        a.flush()  # nothing held since the last flush: nothing to hand over
        assert a.send_held(2, b"three")
        await asyncio.sleep(0.05)
        assert len(b.events) == 0
        a.flush()  # each flush hands over what was held since the one before
        with anyio.fail_after(5):
            third = await b.events.receive()
        assert isinstance(third, Frame) and third.data == b"three"
        assert a.counters(2).frames_sent >= 3
