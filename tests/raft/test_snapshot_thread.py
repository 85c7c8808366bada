"""Snapshot files written off the event loop: the loop keeps running, the engine sees
SERIALIZING until the file is durable, a leader's snapshot lands after ours, and the
simulator's delayed write is lost by a crash before it ran."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import threading
from pathlib import Path
from typing import Any

from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.snapshot import (
    FAILED,
    NOT_SERIALIZING,
    SERIALIZING,
    SUCCESS,
    SnapshotStore,
    decode_snapshot,
)

#: Guards against a deadlock only (a write on the loop's thread would wait for itself).
GUARD = 20.0


class GatedDisk(OsDisk):
    """``replace`` waits until :attr:`release` is set and records what it wrote, in order."""

    def __init__(self) -> None:
        super().__init__(sync=False)
        self.release = threading.Event()
        self.started = threading.Event()
        self.written: list[bytes] = []
        self.threads: list[threading.Thread] = []

    def replace(self, path: str, data: bytes) -> None:
        self.threads.append(threading.current_thread())
        self.started.set()
        if not self.release.wait(GUARD):
            raise OSError("the test never released the write")
        super().replace(path, data)
        self.written.append(data)


def _store(disk: OsDisk, path: Path, state: list[Any]) -> SnapshotStore:
    return SnapshotStore(disk, str(path), capture=lambda: {"items": list(state)},
                         install=lambda _: None, prepare=lambda _: None)


def _anchors(index: int) -> tuple[Any, Any, Any, Any]:
    return (None, (b"b", index + 1, 1), (b"a", index, 1), ["1"])


async def _until(condition: Any) -> None:
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def test_the_loop_runs_while_a_snapshot_file_is_written(tmp_path: Path) -> None:
    disk = GatedDisk()
    path = tmp_path / "snapshot.cbor"
    store = _store(disk, path, list(range(50_000)))
    store.writer.background = True
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        store.serialize(_anchors(7), 8)
        await _until(disk.started.is_set)
        before = ticks
        await _until(lambda: ticks >= before + 20)  # the loop turns while the write waits
        assert disk.threads[0] is not threading.current_thread()
        assert not disk.written and not path.exists()
        assert store.checkSerializing() == (SERIALIZING, 8)  # the journal is kept
        assert store.taken == 0
        disk.release.set()
        await _until(lambda: store.writer._future is not None and store.writer._future.done())
        assert store.checkSerializing() == (SUCCESS, 8)
        assert store.checkSerializing() == (NOT_SERIALIZING, None)
        assert store.taken == 1 and store.writer.background_writes == 1
        assert decode_snapshot(path.read_bytes())["last"] == (b"b", 8, 1)
    finally:
        disk.release.set()
        task.cancel()
        store.close()


async def test_a_failed_write_off_the_loop_is_a_disk_refusal(tmp_path: Path) -> None:
    disk = GatedDisk()
    store = _store(disk, tmp_path / "missing-dir" / "snapshot.cbor", [1, 2])
    store.writer.background = True
    disk.release.set()
    store.serialize(_anchors(1), 2)
    store.wait()
    assert store.checkSerializing() == (FAILED, 2)
    assert store.disk_failures == 1 and store.capture_failures == 0
    store.serialize(_anchors(1), 2)  # within the retry delay: not tried
    assert store.checkSerializing() == (FAILED, 2)
    assert len(disk.threads) == 1
    store.close()


def test_a_leaders_snapshot_waits_for_ours_and_lands_last(tmp_path: Path) -> None:
    disk = GatedDisk()
    path = tmp_path / "snapshot.cbor"
    ours = _store(disk, path, ["old"])
    ours.writer.background = True
    ours.serialize(_anchors(3), 4)
    assert disk.started.wait(GUARD)
    leader_store = _store(OsDisk(sync=False), tmp_path / "leader.cbor", ["new"])
    leader_store.serialize(_anchors(9), 10)
    assert leader_store.checkSerializing()[0] == SUCCESS
    entered = threading.Event()
    original_wait = ours.wait

    def wait() -> None:
        entered.set()
        original_wait()

    ours.wait = wait  # type: ignore[method-assign]
    releaser = threading.Thread(target=lambda: entered.wait(GUARD) and disk.release.set())
    releaser.start()
    try:
        first = True
        while (chunk := leader_store.getTransmissionData("t")) is not None:
            done = ours.setTransmissionData((chunk[0], first, chunk[2]))
            first = False
            if chunk[2]:
                break
        assert done
        assert [decode_snapshot(w)["last"][1] for w in disk.written] == [4, 10]
        assert decode_snapshot(path.read_bytes())["last"] == (b"b", 10, 1)
        assert ours.size == len(disk.written[1])
        assert ours.checkSerializing() == (SUCCESS, 4)  # ours ended, reported as the engine expects
    finally:
        disk.release.set()
        releaser.join()
        ours.close()


def test_a_delayed_write_runs_after_its_polls_and_a_crash_before_loses_it(
        tmp_path: Path) -> None:
    disk = OsDisk(sync=False)
    path = tmp_path / "snapshot.cbor"
    store = _store(disk, path, [1])
    store.serialize(_anchors(1), 2)
    assert store.checkSerializing() == (SUCCESS, 2)  # no delay: the next poll ends it
    previous = path.read_bytes()
    store.writer.delay_polls = 3
    store.serialize(_anchors(5), 6)
    assert store.checkSerializing() == (SERIALIZING, 6)
    assert store.checkSerializing() == (SERIALIZING, 6)
    assert path.read_bytes() == previous  # a crash now keeps the previous snapshot
    crashed = _store(disk, path, [])
    assert crashed.read() == decode_snapshot(previous)
    assert store.checkSerializing() == (SUCCESS, 6)  # the third poll wrote it
    assert decode_snapshot(path.read_bytes())["last"] == (b"b", 6, 1)


async def test_a_node_writes_its_snapshots_off_the_loop() -> None:
    from lazily_queue import testing

    engine = dataclasses.replace(testing.FAST_ENGINE, compaction_log_bytes=16 * 1024)
    async with testing.cluster(1, engine=engine) as c:
        node = await c.leader()
        store = node.driver.replica.snapshots
        assert store.writer.background
        queue = node.queue("q")
        for i in range(400):
            await queue.push({"n": i, "pad": "x" * 200})
        await _until(lambda: store.taken >= 2)
        assert store.writer.background_writes >= store.taken
        assert node.driver.replica.journal.first_index > 1  # compacted after each write
    assert store.writer._executor is None  # stopping the node waited for the write and the thread


def test_no_garbage_collection_runs_while_the_state_is_captured(tmp_path: Path) -> None:
    """The capture runs on the event loop with the cyclic collector paused (it builds a
    container per object, and each collection would traverse them), and a capture that
    raises leaves it running again."""
    enabled: list[bool] = []

    def capture() -> dict[str, Any]:
        enabled.append(gc.isenabled())
        if len(enabled) == 2:
            raise RuntimeError("a defect in the capture")
        return {"items": [[i] for i in range(1_000)]}

    store = SnapshotStore(OsDisk(sync=False), str(tmp_path / "snapshot.cbor"),
                          capture=capture, install=lambda _: None, prepare=lambda _: None)
    assert gc.isenabled()
    store.serialize(_anchors(1), 2)
    store.wait()
    assert store.checkSerializing() == (SUCCESS, 2)
    store.serialize(_anchors(2), 3)
    assert store.checkSerializing() == (FAILED, 3) and store.capture_failures == 1
    assert enabled == [False, False]
    assert gc.isenabled()
    store.close()
