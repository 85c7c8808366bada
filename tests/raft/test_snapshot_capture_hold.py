"""A snapshot is the image of one applied entry: while its state is captured (by the
writer, off the event loop for a node) entries commit but none applies, and those
committed meanwhile apply once the capture ended; the file restores to the state at its
last entry, and a member restarted from it catches up to the others."""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.raft.snapshot import decode_snapshot
from lazily_queue.raft.snapshot_turns import paced
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine

from .harness import Manual

#: Guards against a deadlock only.
GUARD = 20.0


def _image(sm: StateMachine) -> dict[str, Any]:
    """``sm``'s state as plain data, ``now`` aside (a restore keeps the stored one)."""
    return sm.capture()


def _restored(state: Any) -> dict[str, Any]:
    sm = StateMachine()
    sm.restore(state)
    return _image(sm)


def test_entries_committed_while_the_state_is_captured_apply_after_it(tmp_path: Path) -> None:
    c = Manual(tmp_path)
    leader = c.elect()
    c.declare_queue(leader)
    for i in range(5):
        c.propose(leader, C.QUEUE_PUSH, ["q", {"n": i}])
    for _ in range(10):
        c.round()
    replica = c.replicas[leader]
    store, engine = replica.snapshots, replica.engine
    sm = replica.fsm
    assert isinstance(sm, StateMachine)
    store.writer.delay_polls = 6  # captured and written at the sixth poll
    engine.force_compaction()
    c.now += 0.2  # a full tick: the snapshot starts
    c.round()
    assert store.capturing
    index = engine.last_applied
    at_index = _image(sm)
    for i in range(5, 12):
        c.propose(leader, C.QUEUE_PUSH, ["q", {"n": i}])
    for _ in range(5):
        c.round()
    assert store.capturing
    assert engine.commit_index > index  # committed by the majority ...
    assert engine.last_applied == index and _image(sm) == at_index  # ... held
    polls = 0
    while store.capturing:
        c.now += 0.2
        c.round()
        polls += 1
        assert polls < 50, "the capture never ran"
    for _ in range(5):
        c.round()
    assert store.taken == 1
    doc = decode_snapshot((tmp_path / leader / "snapshot.cbor").read_bytes())
    assert doc["last"][1] == index
    assert _restored(doc["state"]) == at_index
    assert engine.last_applied == engine.commit_index > index  # applied after the capture
    assert sm.queues["q"].elements() == [{"n": i} for i in range(12)]
    assert [e for _, e in c.results] == [None] * 13

    restarted = c.start(leader)  # a restart: the snapshot, then the journal after it
    assert restarted.engine.last_applied >= index
    for node in c.ids:
        if node != leader:
            restarted.peer_connected(node, True)
            c.replicas[node].peer_connected(leader, True)
    for _ in range(40):
        c.now += 0.05
        c.round()
    commit = max(r.engine.commit_index for r in c.replicas.values())
    assert all(r.engine.last_applied == commit for r in c.replicas.values())
    images = [repr(_image(r.fsm)) for r in c.replicas.values()]  # type: ignore[arg-type]
    assert images == [images[0]] * 3

async def test_a_node_applies_nothing_while_its_capture_runs_in_slices() -> None:
    """The capture on the writer's thread, in the slices the loop gives it: between them
    the loop turns and commits, and the pushes made meanwhile are answered only once it
    ended; the file holds the state without them."""
    import dataclasses

    from lazily_queue import testing

    engine = dataclasses.replace(testing.FAST_ENGINE, compaction_log_bytes=1 << 30)
    async with testing.cluster(1, engine=engine) as c:
        node = await c.leader()
        replica = node.driver.replica
        store = replica.snapshots
        queue = node.queue("q")
        for i in range(3):
            await queue.push(i)
        released = threading.Event()
        slices: list[bool] = []
        capture = store._capture

        def gated() -> Any:
            for _ in paced(itertools.count()):  # until the loop releases it, slice by slice
                slices.append(threading.current_thread() is not loop_thread)
                if released.is_set():
                    break
            return capture()

        loop_thread = threading.current_thread()
        store._capture = gated
        replica.engine.force_compaction()
        await _until(lambda: len(slices) > 1)
        assert store.capturing and all(slices)
        index = replica.engine.last_applied
        pushes = [asyncio.ensure_future(queue.push(i)) for i in range(3, 6)]
        await _until(lambda: replica.engine.commit_index > index)  # the loop commits
        assert replica.engine.last_applied == index
        assert not any(p.done() for p in pushes)
        released.set()
        await asyncio.wait_for(asyncio.gather(*pushes), GUARD)
        await _until(lambda: store.taken == 1)
        doc = store.read()
        assert doc is not None and doc["last"][1] == index
        assert doc["state"]["queues"]["q"][2] == [0, 1, 2]
        assert [await queue.pop() for _ in range(6)] == [0, 1, 2, 3, 4, 5]


async def _until(condition: Any) -> None:
    for _ in range(1_000_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


def test_a_snapshot_failing_before_its_capture_holds_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that fails before the capture ran (here the collector's pause) leaves no
    capture to wait for: the loop's slices and the engine's applying go on."""
    from lazily_queue.raft import snapshot as snapshot_module
    from lazily_queue.raft.disk import OsDisk
    from lazily_queue.raft.snapshot import FAILED, SnapshotStore

    def broken(make: Any) -> bytes:
        raise RuntimeError("a defect before the capture")

    monkeypatch.setattr(snapshot_module, "without_collections", broken)
    store = SnapshotStore(OsDisk(sync=False), str(tmp_path / "snapshot.cbor"),
                          capture=lambda: {"items": [1]}, install=lambda _: None,
                          prepare=lambda _: None)
    store.writer.background = True
    store.serialize((None, (b"b", 2, 1), (b"a", 1, 1), ["1"]), 2)
    while store.capture_slice():
        pass
    store.wait()
    assert not store.capturing
    assert store.checkSerializing() == (FAILED, 2) and store.capture_failures == 1
    store.close()
