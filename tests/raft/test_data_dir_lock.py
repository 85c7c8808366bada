"""An embedded Node locks its data directory as `lazily-queue node` does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lazily_queue.datadir import DataDirectoryLocked
from lazily_queue.node import Node
from lazily_queue.raft.errors import StorageUnavailable
from lazily_queue.raft.network import LocalHub
from lazily_queue.raft.snapshot import SnapshotError
from tests.tmpfs import mounted_tmpfs


def _node(data_dir: Path, hub: LocalHub) -> Node:
    return Node(1, data_dir=data_dir, durability="none", network=hub.network("1"))


async def test_a_second_node_on_a_directory_in_use_is_refused(tmp_path: Path) -> None:
    hub = LocalHub()
    first = _node(tmp_path / "d", hub)
    await first.start()
    try:
        second = _node(tmp_path / "d", hub)
        with pytest.raises(DataDirectoryLocked, match=r"in use by another running node \(pid"
                           rf" {os.getpid()}, as {re.escape(str(tmp_path / 'd' / 'lock'))} "
                           r"records\); two nodes cannot share"):
            await second.start()
        assert not second.running and first.running
    finally:
        await first.stop()
    again = _node(tmp_path / "d", hub)  # stopped: the directory is free again
    await again.start()
    await again.stop()


def test_another_process_holding_the_directory_refuses_an_embedded_node(
    tmp_path: Path,
) -> None:
    script = textwrap.dedent(f"""
        import asyncio, sys
        from lazily_queue.node import Node
        from lazily_queue.raft.network import LocalHub

        async def main():
            node = Node(1, data_dir={str(tmp_path / "d")!r}, durability="none",
                        network=LocalHub().network("1"))
            await node.start()
            print("started", flush=True)
            sys.stdin.readline()
            await node.stop()

        asyncio.run(main())
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "started"
        with pytest.raises(DataDirectoryLocked, match=f"pid {holder.pid}"):
            asyncio.run(_node(tmp_path / "d", LocalHub()).start())
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)


@pytest.mark.parametrize("in_the_way", ["lock", "raft/journal.log", "raft/snapshot.cbor"])
async def test_a_directory_in_the_way_is_named_with_the_fix(
    tmp_path: Path, in_the_way: str
) -> None:
    (tmp_path / "d" / in_the_way).mkdir(parents=True)
    node = _node(tmp_path / "d", LocalHub())
    with pytest.raises(StorageUnavailable) as caught:
        await node.start()
    message = str(caught.value)
    assert str(tmp_path / "d" / in_the_way) in message and "move it away" in message, message
    assert "free space" not in message and "\n" not in message


@pytest.fixture
def read_only_fs(tmp_path: Path) -> Iterator[Path]:
    """An empty read-only tmpfs (mounting needs root, as CI runs)."""
    with mounted_tmpfs(tmp_path / "ro", "ro,size=1m") as mount:
        yield mount


async def test_a_read_only_file_system_is_named_with_the_fix(read_only_fs: Path) -> None:
    node = _node(read_only_fs, LocalHub())
    with pytest.raises(StorageUnavailable, match="remount its file system read-write"):
        await node.start()


def _open_files(directory: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(directory)):
                found.append(target)
    return found


async def test_a_stopped_node_keeps_no_file_of_its_directory_open(tmp_path: Path) -> None:
    """An application that starts and stops its node must not run out of descriptors."""
    hub = LocalHub()
    for round_ in range(3):
        node = Node(1, data_dir=tmp_path / "d", network=hub.network("1"))
        await node.start()
        await node.wait_for_leader()
        await node.queue("q").push(round_)
        await node.stop()
        assert _open_files(tmp_path / "d") == []
    (tmp_path / "d" / "raft" / "snapshot.cbor").write_bytes(b"damaged")
    with pytest.raises(SnapshotError):
        await Node(1, data_dir=tmp_path / "d", network=hub.network("1")).start()
    assert _open_files(tmp_path / "d") == []


async def test_a_node_whose_address_is_taken_leaves_its_directory_free(
    tmp_path: Path,
) -> None:
    """Retried in the same process, it was refused as 'in use by another running node'."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    listen = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
    try:
        with pytest.raises(OSError, match="in use"):
            async with Node(1, data_dir=tmp_path / "d", listen=listen, secret="s3cret"):
                pass
        assert _open_files(tmp_path / "d") == []
    finally:
        taken.close()
    async with Node(1, data_dir=tmp_path / "d", listen=listen, secret="s3cret") as node:
        assert node.running


async def test_a_directory_whose_metadata_copies_are_both_gone_is_damaged(
    tmp_path: Path,
) -> None:
    """Both metadata copies deleted (their content damaged is refused already) while the
    journal holds entries: the node would forget whom it voted for and whose directory
    it is (another node's, with its metadata removed, would be taken as its own)."""
    from lazily_queue.raft.records import JournalError

    node = _node(tmp_path / "d", LocalHub())
    await node.start()
    await node.wait_for_leader()
    await node.queue("q").push(1)
    await node.stop()
    for copy in ("journal.meta", "journal.meta.b"):
        (tmp_path / "d" / "raft" / copy).unlink()
    again = _node(tmp_path / "d", LocalHub())
    with pytest.raises(JournalError, match=r"journal.meta and its copy are missing"):
        await again.start()
    assert not again.running


def test_a_lock_held_by_another_process_than_the_recorded_node(tmp_path: Path) -> None:
    """The node that recorded its pid exited, and some other process (a backup tool, say)
    holds the lock: the refusal says so rather than naming the dead node's pid."""
    import fcntl

    from lazily_queue.datadir import DirectoryLock

    (tmp_path / "d").mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    lock_path = tmp_path / "d" / "lock"
    lock_path.write_text(dead)
    holder = subprocess.Popen(
        ["flock", str(lock_path), sys.executable, "-c", "import sys; sys.stdin.readline()"],
        stdin=subprocess.PIPE)
    try:
        for _ in range(500):  # until flock holds it
            fd = os.open(lock_path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                break
            finally:
                os.close(fd)
            time.sleep(0.01)
        with pytest.raises(DataDirectoryLocked) as refused:
            DirectoryLock(tmp_path / "d").acquire()
        assert (f"is locked by a process other than the node that recorded its pid {dead} "
                "there (no longer running): `fuser ") in str(refused.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
