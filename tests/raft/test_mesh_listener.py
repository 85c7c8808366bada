"""MeshNetwork takes frames from the socket callbacks: one immediate step per loop
iteration, later frames of the same iteration left to the driver's next step."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lazily_transports import Frame

from lazily_queue.raft.mesh import MeshNetwork


async def test_frames_step_at_once_only_for_the_first_of_an_iteration(tmp_path: Path) -> None:
    net = MeshNetwork("1", listen=f"unix://{tmp_path}/1.sock", peers={"2": "unix:x"},
                      cluster="c", secret=b"s")
    frames: list[bytes] = []
    steps: list[int] = []
    net.set_handlers(lambda _peer, data: frames.append(data), lambda _peer, _up: None,
                     lambda: steps.append(len(frames)))
    events = net.mesh.events
    events.set_listener(net._take)
    events.put_frame_nowait(Frame(2, 1, b"a"))
    events.put_frame_nowait(Frame(3, 1, b"b"))  # same iteration: no second step now
    assert frames == [b"a", b"b"] and steps == [1]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    events.put_frame_nowait(Frame(2, 1, b"c"))  # a later iteration steps at once again
    assert frames == [b"a", b"b", b"c"] and steps == [1, 3]
