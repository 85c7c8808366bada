"""A fsync on the worker thread: the journal prepares it on the writing thread (what it
covers, the descriptor it syncs), the worker takes it before the caller goes on, and a
step starts it before its tick applies."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.raft import fsync as fsync_module
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.fsync import Done, Fsyncer
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.ready import Ready

from .faulty_disk import FaultyDisk


def _fill(j: DurableJournal, first: int, last: int) -> None:
    for i in range(first, last + 1):
        j.add(f"cmd{i}".encode(), i, 1)


def test_a_detached_fsync_covers_what_was_written_when_it_was_prepared(
    tmp_path: Path,
) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    _fill(j, 1, 3)
    j.write()
    j.prepare_fsync()
    _fill(j, 4, 6)
    j.write()  # handed to the OS after the fsync was prepared: not covered by it
    j.fsync()
    assert j.durable_index == 3
    j.fsync()  # prepared no more: covers what is written now
    assert j.durable_index == 6


def test_a_prepared_fsync_proves_nothing_once_the_log_was_cut(tmp_path: Path) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    _fill(j, 1, 2)
    j.sync()
    _fill(j, 3, 5)
    j.write()
    j.prepare_fsync()
    j.deleteEntriesFrom(3)  # (a position) a new leader's log replaces 4 and 5
    _fill(j, 4, 4)
    j.write()
    j.fsync()
    assert j.durable_index == 2  # the fsync began before the cut


def test_the_prepared_descriptor_is_the_one_synced_then_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    disk = OsDisk()
    path = str(tmp_path / "log")
    disk.append(path, b"x" * 100)
    disk.prepare_sync(path)
    prepared = disk._prepared[path]
    opened: list[str] = []
    synced: list[int] = []
    real_open, real_sync = os.open, os.fdatasync

    def recording_open(p: str, *args: int) -> int:
        opened.append(p)
        return real_open(p, *args)

    def recording_sync(fd: int) -> None:
        synced.append(fd)
        real_sync(fd)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "fdatasync", recording_sync)
    disk.sync_detached(path)
    assert synced == [prepared] and opened == []  # nothing opened between take and fsync
    with pytest.raises(OSError):
        os.fstat(prepared)  # closed after it
    disk.sync_detached(path)  # nothing prepared: opens its own
    assert opened == [path]


def test_a_descriptor_that_cannot_be_prepared_is_opened_by_the_sync_which_reports_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    disk = OsDisk()
    path = str(tmp_path / "log")
    disk.append(path, b"x")
    real_open = os.open

    def exhausted(p: str, *args: int) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "open", exhausted)
    disk.prepare_sync(path)  # nothing raised on the writing thread
    assert path not in disk._prepared
    with pytest.raises(OSError, match="Too many open files"):
        disk.sync_detached(path)  # the worker's fsync fails: the driver stalls on it
    monkeypatch.setattr(os, "open", real_open)
    disk.sync_detached(path)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_prepared_descriptor_never_used_is_closed_with_the_file(tmp_path: Path) -> None:
    disk = OsDisk()
    path = str(tmp_path / "log")
    disk.append(path, b"x")
    held = _open_descriptors()
    disk.prepare_sync(path)
    assert _open_descriptors() == held + 1
    disk.prepare_sync(path)  # prepared again: the first one is closed
    assert _open_descriptors() == held + 1
    disk.replace(path, b"y")  # a rewritten file: the old descriptor would sync nothing
    assert path not in disk._prepared and _open_descriptors() == held - 1  # append's too
    disk.append(path, b"z")
    disk.prepare_sync(path)
    disk.close()
    assert _open_descriptors() == held - 1


async def test_the_worker_has_taken_its_fsync_when_start_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fsync_module, "HANDOVER", 30.0)  # however slow the machine
    ran: list[str] = []
    fsyncer = Fsyncer(lambda: ran.append("fsync"), "1")
    loop = asyncio.get_running_loop()
    try:
        for _ in range(3):
            done: asyncio.Future[BaseException | None] = loop.create_future()
            fsyncer.start(loop, done.set_result)
            assert await asyncio.wait_for(done, 5) is None
    finally:
        fsyncer.shutdown()
    assert fsyncer.handed_over == 3 and ran == ["fsync"] * 3


async def test_a_step_starts_its_worker_fsync_before_its_tick_applies(
    tmp_path: Path,
) -> None:
    async with Node(1, data_dir=tmp_path, listen=f"unix:{tmp_path}/n.sock", secret="s",
                    engine=testing.FAST_ENGINE, disk=FaultyDisk(),
                    maintenance_interval=None) as node:
        await node.wait_for_leader()
        driver = node.driver
        driver.fsync.policy.inline_below = 0.0  # every fsync on the worker thread
        await node.queue("q").push("warm")
        order: list[str] = []
        start, prepare, tick = driver.fsync.start, driver.replica.prepare, driver.replica.tick

        def recording_start(loop: asyncio.AbstractEventLoop, done: Done) -> None:
            order.append("fsync")
            start(loop, done)

        def recording_prepare() -> Ready:
            order.append("prepare")
            return prepare()

        def recording_tick(*, sync: bool = False) -> Ready:
            order.append("tick")
            return tick(sync=sync)

        driver.fsync.start = recording_start  # type: ignore[method-assign]
        driver.replica.prepare = recording_prepare  # type: ignore[method-assign]
        driver.replica.tick = recording_tick  # type: ignore[method-assign]
        await node.queue("q").push("value")
        first = order.index("fsync")  # the fsync of the push's append
        assert order[first - 1:first + 2] == ["prepare", "fsync", "tick"], order
        assert await node.queue("q").pop() == "warm"
