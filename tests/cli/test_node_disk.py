"""Node processes and their disks: clear exits for damaged data and a full disk at start,
and a disk that fills while the node runs (it stalls, then resumes by itself)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lazily_queue.node import Node
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.records import HEADER
from tests.tmpfs import fill, mounted_tmpfs

from .node_procs import NodeProc, wait_for, write_config

pytestmark = pytest.mark.slow


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs the test can fill (mounting needs root, as CI runs)."""
    with mounted_tmpfs(tmp_path / "small", "size=4m") as mount:
        yield mount


def _one_line(proc: NodeProc) -> str:
    err = proc.stderr()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_damaged_journal_exits_3_with_one_line(tmp_path: Path) -> None:
    raft = tmp_path / "data1" / "raft"
    journal = DurableJournal(OsDisk(), str(raft))
    for index in range(1, 6):
        journal.add(b"\x05", index, 1)
    journal.sync()
    data = bytearray((raft / "journal.log").read_bytes())
    data[HEADER.size + 2] ^= 0x40  # the first record; valid records follow it
    (raft / "journal.log").write_bytes(bytes(data))
    config = write_config(tmp_path / "n1.toml", 1, {1: f"unix:{tmp_path}/n1.sock"})
    proc = NodeProc(config)
    assert proc.wait_exit() == 3
    line = _one_line(proc)
    assert "damaged data" in line and "lazily-queue rejoin" in line


def test_a_full_disk_at_start_exits_4_with_one_line(tmp_path: Path, small_fs: Path) -> None:
    fill(small_fs)
    config = write_config(tmp_path / "n1.toml", 1, {1: f"unix:{tmp_path}/n1.sock"},
                          data_dir=str(small_fs / "data1"))
    proc = NodeProc(config)
    assert proc.wait_exit() == 4
    line = _one_line(proc)
    assert "No space left on device" in line and "free space" in line


def test_a_disk_without_room_for_the_journal_exits_4_naming_it(
        tmp_path: Path, small_fs: Path) -> None:
    reserve = small_fs / "reserve"
    # room for the lock and the two metadata copies (a 4 KiB page each on tmpfs), none for
    # the journal's first records
    reserve.write_bytes(b"\0" * 3 * 4096)
    fill(small_fs)
    reserve.unlink()
    config = write_config(tmp_path / "n1.toml", 1, {1: f"unix:{tmp_path}/n1.sock"},
                          data_dir=str(small_fs / "data1"), extra="startup_timeout = 2")
    proc = NodeProc(config)
    assert proc.wait_exit() == 4
    line = _one_line(proc)
    assert "cannot write its journal" in line and "No space left on device" in line, line
    assert "make room" in line and "other nodes" not in line, line


async def test_a_disk_that_fills_stalls_the_node_and_it_resumes(
    tmp_path: Path, small_fs: Path
) -> None:
    data = small_fs / "data1"
    config = write_config(
        tmp_path / "n1.toml", 1, {1: f"unix:{tmp_path}/n1.sock"}, data_dir=str(data),
        extra='durability = "fsync"', app='entry = "node_app:pump"')
    config.write_text(config.read_text().replace('durability = "none"\n', ""))
    proc = NodeProc(config)
    try:
        proc.wait_ready()
        proc.wait_line("acked 20")
        filler = fill(small_fs)
        # The journal's preallocated space (up to 1 MiB) still takes records: the node
        # refuses writes once it needs to grow the file.
        proc.wait_line("refused", timeout=120)
        assert wait_for(lambda: not proc.status()["disk"]["writable"], what="a stalled disk")
        os.remove(filler)
        wait_for(lambda: proc.status()["disk"]["writable"], what="a writable disk")
        refused = max(int(line.split()[1]) for line in proc.seen if line.startswith("refused"))
        # acknowledged again, 20 writes past the last refusal seen (writes refused before
        # the disk was freed may still be printed: their numbers are skipped)
        proc.wait_line("acked ", match=lambda line: int(line.split()[1]) >= refused + 20)
    finally:
        assert proc.terminate() == 0, proc.stderr()
    err = proc.stderr()
    assert err.count("cannot write its journal") == 1, err  # once per change of state
    assert err.count("accepts writes again") == 1, err
    acked = [int(line.split()[1]) for line in proc.seen if line.startswith("acked")]
    unknown = {int(line.split()[1]) for line in proc.seen if line.endswith("unknown")}
    # Opened again, with no rejoin: every acknowledged push is there, in order.
    node = Node(1, data_dir=data, listen=f"unix:{tmp_path}/again.sock", secret="s3cret",
                cluster="test")
    async with node:
        await node.wait_for_leader()
        await node.barrier()
        elements = [v for v in node.queue("q").storage.elements()]  # type: ignore[attr-defined]
    kept = [v for v in elements if v not in unknown]
    assert kept[: len(acked)] == acked
    assert kept[len(acked):] in ([], [acked[-1] + 1])  # a push the stop cut short may apply


def test_a_node_set_up_before_the_disk_filled_starts_and_stalls_once_it_must_grow(
    tmp_path: Path, small_fs: Path
) -> None:
    data = small_fs / "data1"
    config = write_config(
        tmp_path / "n1.toml", 1, {1: f"unix:{tmp_path}/n1.sock"}, data_dir=str(data),
        app='entry = "node_app:pump"')
    config.write_text(config.read_text().replace('durability = "none"\n', ""))
    first = NodeProc(config)
    try:
        first.wait_ready()
        first.wait_line("acked 5")
    finally:
        assert first.terminate() == 0, first.stderr()
    filler = fill(small_fs)
    again = NodeProc(config)  # not exit 4: its journal's preallocated space takes writes
    try:
        again.wait_ready()
        again.wait_line("refused", timeout=120)  # until the journal file must grow
        assert wait_for(lambda: not again.status()["disk"]["writable"], what="a stalled disk")
        os.remove(filler)
        wait_for(lambda: again.status()["disk"]["writable"], what="a writable disk")
    finally:
        assert again.terminate() == 0, again.stderr()
    assert "error:" not in again.stderr()
