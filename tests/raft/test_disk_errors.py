"""A full or failing disk never tears the journal; a node stalls and resumes by itself."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.datadir import disk_problem
from lazily_queue.health import STALE_LEADER
from lazily_queue.node import Node
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.errors import StorageUnavailable
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.records import HEADER, decode_records
from lazily_queue.raft.rejoin import floor_of
from lazily_queue.status import node_status

from .faulty_disk import FaultyDisk


def _fill(j: DurableJournal, first: int, count: int, term: int = 1) -> None:
    for index in range(first, first + count):
        j.add(f"command {index}".encode(), index, term)


def _file(j: DurableJournal) -> bytes:
    """The journal file up to the zeros of its preallocated end."""
    with open(j.path, "rb") as f:
        return f.read().rstrip(b"\0")


def test_a_failed_append_is_cut_back_to_the_last_whole_record(tmp_path: Path) -> None:
    disk = FaultyDisk()
    j = DurableJournal(disk, str(tmp_path))
    _fill(j, 1, 3)
    j.sync()
    disk.full = True
    _fill(j, 4, 2)
    with pytest.raises(OSError, match="No space"):
        j.write()
    entries, _, valid = decode_records(_file(j))
    assert [e[1] for e in entries] == [1, 2, 3] and valid == len(_file(j))
    disk.full = False
    j.sync()  # what failed is written again, after the last whole record
    again = DurableJournal(FaultyDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3, 4, 5] and again.torn_bytes == 0


def test_a_failed_fsync_is_never_trusted(tmp_path: Path) -> None:
    disk = FaultyDisk()
    j = DurableJournal(disk, str(tmp_path))
    _fill(j, 1, 2)
    j.sync()
    _fill(j, 3, 2)
    assert j.write()
    disk.fsync_errors = 1
    with pytest.raises(OSError, match="Input/output"):
        j.fsync()
    assert j.durable_index == 2
    j.discard_unsynced()
    with open(j.path, "r+b") as f:  # the kernel may have dropped the unsynced pages
        f.seek(len(_file(j)) - 5)
        f.write(b"\0" * 5)
    assert j.needs_sync and j.write()
    j.fsync()
    assert j.durable_index == 4
    entries, _, valid = decode_records(_file(j))
    assert [e[1] for e in entries] == [1, 2, 3, 4] and valid == len(_file(j))


def test_a_damaged_last_record_is_cut_and_withholds_the_vote(tmp_path: Path) -> None:
    j = DurableJournal(FaultyDisk(), str(tmp_path))
    j.setCurrentTerm(4, "2")
    _fill(j, 1, 3, term=4)
    j.sync()
    data = bytearray(_file(j))
    data[-2] ^= 0x10  # inside the last record's command: complete, but its checksum fails
    Path(j.path).write_bytes(bytes(data))
    again = DurableJournal(FaultyDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2] and again.tail.damaged
    assert floor_of(again.meta) == (4, 3)
    assert floor_of(DurableJournal(FaultyDisk(), str(tmp_path)).meta) == (4, 3)  # durable


def test_a_torn_last_record_is_cut_without_a_floor(tmp_path: Path) -> None:
    j = DurableJournal(FaultyDisk(), str(tmp_path))
    _fill(j, 1, 3)
    j.sync()
    data = _file(j)
    Path(j.path).write_bytes(data[: len(data) - 3])  # the last append reached the disk in part
    again = DurableJournal(FaultyDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2] and not again.tail.damaged
    assert floor_of(again.meta) is None
    zeros = data[: len(data) - HEADER.size - 9] + b"\0" * (HEADER.size + 9)
    Path(j.path).write_bytes(zeros)  # never-written blocks read as zeros
    assert not DurableJournal(FaultyDisk(), str(tmp_path)).tail.damaged


async def _until(predicate: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def test_a_single_node_on_a_full_disk_stalls_keeps_reads_and_resumes(
    tmp_path: Path,
) -> None:
    disk = FaultyDisk()
    kwargs = {"data_dir": tmp_path, "listen": f"unix:{tmp_path}/n.sock", "secret": "s",
              "engine": testing.FAST_ENGINE, "disk_retry": 0.05}
    async with Node(1, disk=disk, **kwargs) as node:  # type: ignore[arg-type]
        await node.wait_for_leader()
        q = node.queue("q")
        await q.push(1)
        disk.full = True
        with pytest.raises(StorageUnavailable, match="No space left on device") as unknown:
            await q.push(2)
        assert unknown.value.applied is None
        assert node.status()["disk"]["writable"] is False
        with pytest.raises(StorageUnavailable, match="was not applied") as refused:
            await q.push(3)
        assert refused.value.applied is False
        assert q.len() >= 1  # reads go on
        disk.full = False
        await _until(lambda: node.status()["disk"]["writable"])
        await q.push(4)
        elements = q.storage.elements()  # type: ignore[attr-defined]
    assert elements in ([1, 4], [1, 2, 4])  # push 2's outcome was reported unknown
    async with Node(1, **kwargs) as again:  # type: ignore[arg-type]
        await again.wait_for_leader()
        await again.barrier()
        assert again.queue("q").storage.elements() == elements  # type: ignore[attr-defined]


async def test_a_member_whose_disk_fills_hands_over_and_catches_up(tmp_path: Path) -> None:
    disks = {n: FaultyDisk() for n in ("1", "2", "3")}
    cluster = testing.cluster(3, data_dir=tmp_path, durability="fsync", disk_retry=0.05,
                              node_options=lambda n: {"disk": disks[n]})
    nodes = cluster.nodes
    for node in nodes.values():
        await node.start()
    try:
        await _until(lambda: any(n.is_leader for n in nodes.values()))
        first = next(n for n in nodes.values() if n.is_leader)
        await first.queue("q").push("a")
        disks[first.node_id].fsync_errors = 10_000  # every fsync of the leader fails
        try:  # its entries leave before its fsync: the followers' copies may commit it
            await first.queue("q").push("unknown")
            acknowledged = True
        except StorageUnavailable as exc:
            assert "outcome is unknown" in str(exc)
            assert exc.applied is None
            acknowledged = False
        others = [n for n in nodes.values() if n is not first]
        await _until(lambda: any(n.is_leader for n in others))
        second = next(n for n in others if n.is_leader)
        await second.queue("q").push("b")
        assert first.status()["disk"]["writable"] is False
        disks[first.node_id].fsync_errors = 0
        await _until(lambda: first.status()["disk"]["writable"])
        await first.barrier()
        for node in nodes.values():
            await node.barrier()
        kept = [n.queue("q").storage.elements() for n in nodes.values()]  # type: ignore[attr-defined]
        assert kept == [kept[0]] * 3
        assert kept[0] == ["a", "unknown", "b"] or (not acknowledged and kept[0] == ["a", "b"])
    finally:
        await cluster.close()


async def _steps(node: Node, count: int) -> None:
    """Wait until the node's driver has taken ``count`` more steps."""
    target = node.driver.steps + count
    await _until(lambda: node.driver.steps >= target)


@pytest.mark.parametrize("members", [1, 3])
async def test_nothing_is_acknowledged_before_a_majority_fsynced(
    tmp_path: Path, members: int
) -> None:
    """The leader's entries leave before its own fsync (it writes in parallel with
    replication), and its copy counts only once durable: with its fsync and one
    follower's held, nothing is acknowledged; the other follower's durable copy and
    then a second one make a majority, the leader's still held."""
    cluster, disks = await _started(tmp_path, members)
    nodes = list(cluster.nodes.values())
    try:
        leader = next(n for n in nodes if n.is_leader)
        followers = [n for n in nodes if n is not leader]
        q = leader.queue("q")
        await q.push("declared")
        held = [leader, *followers[:1]]
        for node in held:
            _hold_fsyncs(node, disks[node.node_id])
        before = leader.driver.replica.journal.last_index
        push = asyncio.ensure_future(q.push("held"))
        for node in held:
            await _until(disks[node.node_id].waiting.is_set)
        for node in nodes:  # the entry is in every log: it left before the leader's fsync
            await _until(lambda n=node: n.driver.replica.journal.last_index > before)
        await _steps(leader, 10)
        assert not push.done()
        assert leader.driver.replica.engine.commit_index <= before
        for node in reversed(held):  # a follower first: then two of three copies are durable
            disks[node.node_id].release()
            if members == 3:
                await asyncio.wait_for(push, 5)
        await asyncio.wait_for(push, 5)
    finally:
        await _stop(cluster, disks)


async def test_no_acknowledgement_from_a_follower_before_its_fsync(tmp_path: Path) -> None:
    """Followers acknowledge entries only once they are durable: with both followers'
    fsyncs held, the leader cannot count them, however long it waits."""
    cluster, disks = await _started(tmp_path, 3)
    nodes = list(cluster.nodes.values())
    try:
        leader = next(n for n in nodes if n.is_leader)
        followers = [n for n in nodes if n is not leader]
        q = leader.queue("q")
        await q.push("declared")
        for f in followers:
            _hold_fsyncs(f, disks[f.node_id])
        before = leader.driver.replica.journal.last_index
        push = asyncio.ensure_future(q.push("held"))
        for f in followers:
            await _until(lambda f=f: f.driver.replica.journal.last_index > before)
            await _until(disks[f.node_id].waiting.is_set)
        await _steps(leader, 10)
        assert not push.done()
        assert all(m <= before for m in leader.driver.replica.engine.match_index.values())
        for f in followers:
            disks[f.node_id].release()
        await asyncio.wait_for(push, 5)
    finally:
        await _stop(cluster, disks)


async def _started(
    tmp_path: Path, members: int
) -> tuple[testing.Cluster, dict[str, FaultyDisk]]:
    disks = {str(n): FaultyDisk() for n in range(1, members + 1)}
    cluster = testing.cluster(members, data_dir=tmp_path, durability="fsync",
                              node_options=lambda n: {"disk": disks[n]})
    for node in cluster.nodes.values():
        await node.start()
    await _until(lambda: any(n.is_leader for n in cluster.nodes.values()))
    return cluster, disks


def _hold_fsyncs(node: Node, disk: FaultyDisk) -> None:
    """Hold the node's fsyncs from now on: they run on its worker thread, where the disk
    holds them (it never holds one on the loop's thread: that would hold the whole loop)."""
    node.driver.fsync.policy.inline_below = 0.0
    disk.hold_fsyncs()


async def _stop(cluster: testing.Cluster, disks: dict[str, FaultyDisk]) -> None:
    for d in disks.values():
        d.release()
    await cluster.close()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_file_that_is_not_a_regular_file_is_refused_not_waited_on(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO made the node wait forever in open() (SIGINT could not stop it), a device
    read as an empty file or without end."""
    path = tmp_path / "snapshot.cbor"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/null")
    result: list[object] = []

    def read() -> None:
        try:
            result.append(OsDisk().read(str(path)))
        except OSError as exc:
            result.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # let the reader go
        reader.join(5)
        pytest.fail("reading a FIFO waited for a writer")
    assert isinstance(result[0], OSError), result
    assert "move it away" in disk_problem(result[0])


def test_a_file_too_large_for_memory_is_a_disk_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A (sparse) file of a terabyte in the data directory ended the start with a
    MemoryError traceback; reading it is an ``OSError`` the node reports as a disk problem."""
    import lazily_queue.raft.disk as disk_module

    path = tmp_path / "journal.meta"
    path.write_bytes(b"x" * 100)
    real_open = open

    class Huge:
        def __init__(self, fd: int, mode: str) -> None:
            self.f = real_open(fd, mode)

        def __enter__(self) -> Huge:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def fileno(self) -> int:
            return self.f.fileno()

        def read(self) -> bytes:
            raise MemoryError

    monkeypatch.setattr(disk_module, "open", Huge, raising=False)
    with pytest.raises(OSError, match="100 bytes do not fit in memory") as info:
        OsDisk().read(str(path))
    assert "journal.meta" in disk_problem(info.value)


def test_a_data_dir_that_cannot_be_made_names_the_path_not_the_disk() -> None:
    """A data_dir under /proc (or a vanished mount) cannot be made: ENOENT is no fault of
    the disk, and the hint says to choose another data_dir."""
    with pytest.raises(OSError) as info:
        os.makedirs("/proc/lazily-queue-no-such/data")
    problem = disk_problem(info.value)
    assert "/proc/lazily-queue-no-such" in problem and "choose another data_dir" in problem
    assert "system log" not in problem


async def test_a_leader_whose_disk_fills_says_it_may_no_longer_lead(tmp_path: Path) -> None:
    """Stalled, the old leader still shows itself leader (it drops what the others send);
    its health says it may no longer lead, and the others name the new leader."""
    disks = {n: FaultyDisk() for n in ("1", "2", "3")}
    cluster = testing.cluster(3, data_dir=tmp_path, durability="fsync", disk_retry=0.05,
                              node_options=lambda n: {"disk": disks[n]})
    async with cluster:
        first = await cluster.wait_for_leader()
        assert STALE_LEADER not in node_status(first)["health"]["reasons"]
        disks[first.node_id].full = True
        with pytest.raises(StorageUnavailable):
            await first.queue("q").push(1)
        others = [n for n in cluster.nodes.values() if n is not first]
        await _until(lambda: any(n.is_leader for n in others))
        seen = node_status(first)
        assert seen["state"] == "leader" and seen["disk"]["writable"] is False
        assert STALE_LEADER in seen["health"]["reasons"]
        assert all(STALE_LEADER not in node_status(n)["health"]["reasons"] for n in others)
        disks[first.node_id].full = False
        await _until(lambda: first.status()["disk"]["writable"])
        await _until(lambda: not first.is_leader)
        assert STALE_LEADER not in node_status(first)["health"]["reasons"]


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_file_or_directory_refused_to_this_user_says_which_access_to_give(
        tmp_path: Path, kind: str) -> None:
    """A metadata file this user may not read needs access to it, not only to its
    directory."""
    path = tmp_path / ("journal.meta" if kind == "file" else "raft")
    if kind == "file":
        path.write_bytes(b"x")
    else:
        path.mkdir()
    refused = PermissionError(13, "Permission denied", str(path))
    problem = disk_problem(refused)
    uid = os.geteuid()
    assert problem == f"Permission denied ({path}); give the user running it (uid {uid}) " + (
        "read and write access to that file, and write access to its directory"
        if kind == "file" else "write access to the directory")


class _DeniedDirectory(FaultyDisk):
    """A disk whose files are writable but whose directory is not: a replacement (the
    metadata's, through a temporary file beside it) is refused."""

    def replace(self, path: str, data: bytes) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", f"{path}.tmp")


async def test_a_journal_write_refused_names_the_file_refused(tmp_path: Path) -> None:
    """The metadata's replacement refused in a read-only directory is reported with the
    file the system refused, not the journal's log, whose own permissions are fine."""
    kwargs = {"data_dir": tmp_path, "listen": f"unix:{tmp_path}/n.sock", "secret": "s",
              "engine": testing.FAST_ENGINE, "disk_retry": 0.05}
    async with Node(1, **kwargs) as node:  # type: ignore[arg-type]
        await node.wait_for_leader()
    async with Node(1, disk=_DeniedDirectory(), **kwargs) as node:  # type: ignore[arg-type]
        await _until(lambda: not node.status()["disk"]["writable"])
        error = node.status()["disk"]["error"]
    meta = tmp_path / "raft" / "journal.meta"
    assert f"cannot write its journal {meta}.tmp: Permission denied" in error, error
