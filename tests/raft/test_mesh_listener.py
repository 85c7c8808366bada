"""MeshNetwork takes frames from the socket callbacks and has every run of them stepped at
once; the driver leaves frames that arrive while a commit publication is pending to it,
and a step on frames schedules no callback of its own."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from lazily_transports import Frame

from lazily_queue.node import Node
from lazily_queue.raft.mesh import MeshNetwork


async def test_every_run_of_frames_is_stepped_at_once(tmp_path: Path) -> None:
    net = MeshNetwork("1", listen=f"unix://{tmp_path}/1.sock", peers={"2": "unix:x"},
                      cluster="c", secret=b"s")
    frames: list[bytes] = []
    steps: list[tuple[int, bool]] = []
    net.set_handlers(lambda _peer, data: frames.append(data), lambda _peer, _up: None,
                     lambda now: steps.append((len(frames), now)))
    events = net.mesh.events
    events.set_listener(net._take)
    ready = _ready_callbacks()
    events.put_frame_nowait(Frame(2, 1, b"a"))
    events.put_frame_nowait(Frame(3, 1, b"b"))  # same iteration: the driver decides
    assert frames == [b"a", b"b"] and steps == [(1, True), (2, True)]
    assert _ready_callbacks() == ready  # no callback queued


def _ready_callbacks() -> int | None:
    """How many callbacks the running loop holds ready (None on a loop that does not
    show them, as uvloop)."""
    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    return None if ready is None else len(ready)


async def test_a_push_on_three_members_queues_no_callback_per_frame(tmp_path: Path) -> None:
    """Followers step on the leader's frames and answer without leaving a step, a flush
    or any other callback behind; the leader's second reply waits for the commit
    publication its first one scheduled."""
    peers = {i: f"unix://{tmp_path}/n{i}.sock" for i in (1, 2, 3)}
    nodes = [Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s",
                  durability="none", maintenance_interval=None) for i in (1, 2, 3)]
    loop = asyncio.get_running_loop()
    if not hasattr(loop, "_run_once") or not hasattr(loop, "_ready"):
        pytest.skip("the loop does not show its ready callbacks")
    ran: Counter[str] = Counter()
    run_once = loop._run_once
    counting = [False]

    def counted() -> None:
        if counting[0]:
            for handle in loop._ready:
                ran[getattr(handle._callback, "__qualname__", "")] += 1
        run_once()

    loop._run_once = counted  # type: ignore[method-assign]
    try:
        for node in nodes:
            await node.start()
        leader = await nodes[0].wait_for_leader(timeout=10)
        queue = next(n for n in nodes if n.node_id == str(leader)).queue("q")
        for i in range(20):
            await queue.push(i)
        counting[0] = True
        for i in range(50):
            await queue.push(i)
        counting[0] = False
    finally:
        del loop._run_once
        for node in nodes:
            await node.stop()
    idle = ran["Driver._scheduled_step"] + ran["SocketChannel._flush"]
    assert idle < 25, ran  # at most a few, from timers and keepalives; not one per frame
