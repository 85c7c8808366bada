"""A disk that refuses snapshots: one log line, attempts spaced out, recovery logged."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.network import LocalHub
from lazily_queue.raft.snapshot import FAILED, SUCCESS, SnapshotStore
from tests.tmpfs import mounted_tmpfs


class RefusingDisk(OsDisk):
    """Refuses every ``replace`` while ``full``."""

    def __init__(self) -> None:
        super().__init__(sync=False)
        self.full = True
        self.replaces = 0

    def replace(self, path: str, data: bytes) -> None:
        self.replaces += 1
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().replace(path, data)


def test_a_full_disk_is_logged_once_and_snapshots_are_spaced_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    captures = [0]

    def capture() -> Any:
        captures[0] += 1
        return {"queues": {}}

    disk = RefusingDisk()
    store = SnapshotStore(disk, str(tmp_path / "snapshot.cbor"), capture=capture,
                          install=lambda _: None, prepare=lambda _: None,
                          clock=lambda: now[0])
    store.retry_delay = retry = 2.0
    data = (None, (b"", 5, 1), (b"", 4, 1), ["1"])
    caplog.set_level(logging.WARNING, logger="lazily_queue.raft.snapshot")
    for step in range(100):  # the engine asks again on every step
        now[0] = step * retry / 40
        store.serialize(data, step)
        assert store.checkSerializing()[0] == FAILED
    assert disk.replaces == captures[0] == 3  # at 0, after one retry delay and after two
    refusals = [r for r in caplog.records if "taking a snapshot failed" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].exc_info is None
    assert "No space left on device" in refusals[0].getMessage()
    disk.full = False
    now[0] += retry
    store.serialize(data, 100)
    assert store.checkSerializing()[0] == SUCCESS
    assert "taken again after 3 attempts the disk refused" in caplog.text


async def test_a_node_spaces_snapshots_by_its_disk_retry() -> None:
    from lazily_queue import testing

    async with testing.cluster(1, disk_retry=0.3) as c:
        node = await c.leader()
        assert node.driver.replica.snapshots.retry_delay == 0.3


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (mounting needs root, as CI runs)."""
    with mounted_tmpfs(tmp_path / "small", "size=2m") as mount:
        yield mount


def test_a_snapshot_the_disk_refuses_leaves_no_partial_file_holding_the_space(
    small_fs: Path,
) -> None:
    """The journal needs that space to grow once the operator frees some."""
    disk = OsDisk()
    free = os.statvfs(small_fs).f_bavail
    with pytest.raises(OSError) as caught:
        disk.replace(str(small_fs / "snapshot.cbor"), bytes(4 << 20))
    assert caught.value.errno == errno.ENOSPC
    assert sorted(p.name for p in small_fs.iterdir()) == []
    assert os.statvfs(small_fs).f_bavail == free


class SnapshotRefusingDisk(OsDisk):
    """Refuses to write snapshot files (``code``: full by default); the journal and
    metadata are written."""

    def __init__(self, code: int = errno.ENOSPC) -> None:
        super().__init__()
        self.code = code

    def replace(self, path: str, data: bytes) -> None:
        if path.endswith("snapshot.cbor"):
            raise OSError(self.code, os.strerror(self.code))
        super().replace(path, data)


async def test_a_node_whose_snapshots_are_refused_logs_it_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Not one line per step from the consensus library."""
    engine = replace(testing.FAST_ENGINE, compaction_min_entries=20, compaction_min_time=3600)
    node = Node(1, data_dir=tmp_path, network=LocalHub().network("1"), engine=engine,
                disk=SnapshotRefusingDisk(), disk_retry=0.2)
    caplog.set_level(logging.WARNING)
    async with node:
        await node.wait_for_leader()
        for i in range(60):
            await node.queue("q").push(i)
        for _ in range(100):  # a second of steps, several retries
            await asyncio.sleep(0.01)
        assert node.status()["snapshots_taken"] == 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("taking a snapshot failed" in line for line in lines) == 1, lines
    assert len(lines) <= 3, lines[:20]


def _leader_and_follower(tmp_path: Path, now: list[float], code: int = errno.ENOSPC
                         ) -> tuple[SnapshotStore, SnapshotStore, Any]:
    """A leader's store holding a snapshot, a follower's store whose disk refuses it, and
    ``send()``: one whole transmission from the first to the second (``None`` when the
    leader holds it back), whether the follower stored it."""
    leader = SnapshotStore(OsDisk(sync=False), str(tmp_path / "leader.cbor"),
                           capture=lambda: {"queues": {}}, install=lambda _: None,
                           prepare=lambda _: None, clock=lambda: now[0])
    leader.serialize((None, (b"b", 6, 1), (b"a", 5, 1), ["1"]), 6)
    assert leader.checkSerializing()[0] == SUCCESS
    follower = SnapshotStore(SnapshotRefusingDisk(code), str(tmp_path / "snapshot.cbor"),
                             capture=lambda: {"queues": {}}, install=lambda _: None,
                             prepare=lambda _: None)

    def send() -> bool | None:
        while True:
            data = leader.getTransmissionData("f")
            if data is None:
                return None
            stored = follower.setTransmissionData(data)
            if data[2]:  # the last chunk
                return bool(stored)

    return leader, follower, send


def test_a_leaders_snapshot_the_disk_refuses_is_shown_until_it_is_stored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from lazily_queue.health import health

    _, follower, send = _leader_and_follower(tmp_path, [0.0])
    assert send() is False
    assert follower.write_error is not None
    assert "No space left on device" in follower.write_error
    assert "it needs " in follower.write_error and " are free: make room" in follower.write_error
    status = {"members": [], "has_quorum": True, "leader": "1", "term": 2,
              "disk": {"writable": True, "error": None,
                       "snapshot_error": follower.write_error}}
    seen = health(status, [])
    assert seen["level"] == "critical"
    assert any("the leader's snapshot cannot be stored" in r for r in seen["reasons"])
    assert caplog.text.count("could not store the snapshot from the leader") == 1


def test_a_snapshot_refused_for_another_cause_than_room_gives_its_size_alone(
        tmp_path: Path) -> None:
    _, follower, send = _leader_and_follower(tmp_path, [0.0], errno.EIO)
    assert send() is False
    assert follower.write_error is not None
    assert re.search(re.escape(os.strerror(errno.EIO)) + r" \(it needs [\d,]+ bytes\)$",
                     follower.write_error), follower.write_error  # no room to make


def test_a_snapshot_a_member_refused_is_sent_again_less_and_less_often(
        tmp_path: Path) -> None:
    now = [0.0]
    leader, follower, send = _leader_and_follower(tmp_path, now)
    leader.retry_delay = 1.0
    sent_at = []
    while now[0] < 100:  # the engine asks for a chunk on every step
        outcome = send()
        if outcome is not None:
            assert outcome is False
            sent_at.append(now[0])
        now[0] = round(now[0] + 0.05, 2)
    assert sent_at == [0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 61.0, 91.0]  # up to 30 s apart
    follower._disk = OsDisk(sync=False)  # room was made
    now[0] = 121.0
    assert send() is True and follower.write_error is None
    assert follower.installed == 1


def test_a_new_snapshot_is_sent_at_once_to_a_member_that_refused_the_last(
        tmp_path: Path) -> None:
    now = [0.0]
    leader, _, send = _leader_and_follower(tmp_path, now)
    assert send() is False
    assert send() is None
    leader.serialize((None, (b"c", 9, 1), (b"b", 8, 1), ["1"]), 9)
    assert leader.checkSerializing()[0] == SUCCESS
    assert send() is False


async def test_a_node_shows_the_snapshot_error_in_its_status(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as c:
        node = await c.leader()
        assert node.status()["disk"]["snapshot_error"] is None
        node.driver.replica.snapshots.write_error = "snapshot.cbor: No space left on device"
        assert node.status()["disk"]["snapshot_error"] == (
            "snapshot.cbor: No space left on device")
