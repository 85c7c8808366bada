"""The preallocated journal file: records written over zeros, torn and zeroed ends,
corruption in the middle, a full disk at growth and at write, a process killed mid-write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal, JournalCorruptedError
from lazily_queue.raft.records import HEADER, SECTOR, encode_record
from lazily_queue.raft.rejoin import floor_of

from .faulty_disk import FaultyDisk

ROOT = Path(__file__).resolve().parents[2]


def _fill(j: DurableJournal, first: int, count: int, term: int = 1, size: int = 10) -> None:
    for index in range(first, first + count):
        j.add(f"{index:0{size}d}".encode(), index, term)


def _indexes(path: Path, disk: OsDisk | None = None) -> list[int]:
    return [e[1] for e in DurableJournal(disk or OsDisk(), str(path))[:]]


def test_the_file_is_preallocated_and_records_are_written_in_place(tmp_path: Path) -> None:
    disk = OsDisk(preallocate=8192)
    j = DurableJournal(disk, str(tmp_path))
    _fill(j, 1, 3)
    j.sync()
    assert os.path.getsize(j.path) == 8192 and disk.growths == 1
    _fill(j, 4, 3)
    j.sync()
    assert os.path.getsize(j.path) == 8192 and disk.growths == 1  # no growth, no metadata
    data = Path(j.path).read_bytes()
    assert not data[j.size_bytes :].strip(b"\0")
    _fill(j, 7, 300)  # past the end: grows by whole steps
    j.sync()
    assert os.path.getsize(j.path) % 8192 == 0 and disk.growths == 2
    assert _indexes(tmp_path) == list(range(1, 307))


def test_zeros_after_the_last_record_are_the_end_not_a_torn_tail(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    _fill(j, 1, 5)
    j.sync()
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3, 4, 5]
    assert again.torn_bytes == 0 and not again.tail.damaged
    assert "torn" not in caplog.text and "damaged" not in caplog.text
    _fill(again, 6, 1)
    again.sync()
    assert _indexes(tmp_path) == [1, 2, 3, 4, 5, 6]


def test_a_record_torn_at_a_sector_boundary_is_cut_without_a_floor(tmp_path: Path) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    j.setCurrentTerm(2, None)
    _fill(j, 1, 3, term=2)
    j.sync()
    start = j.size_bytes
    record = encode_record(b"x" * 2000, 4, 2)
    with open(j.path, "r+b") as f:  # the write reached the disk up to a sector boundary
        f.seek(start)
        f.write(record[: SECTOR * 2 - start])
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3]
    assert again.torn_bytes > 0 and not again.tail.damaged
    assert floor_of(again.meta) is None
    _fill(again, 4, 1, term=2)
    again.sync()
    assert _indexes(tmp_path) == [1, 2, 3, 4]


def test_a_zeroed_record_ends_the_log(tmp_path: Path) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    _fill(j, 1, 6)
    j.sync()
    start = j._offsets[4]
    with open(j.path, "r+b") as f:  # records 5 and 6 never reached the disk
        f.seek(start)
        f.write(b"\0" * (j.size_bytes - start))
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3, 4] and not again.tail.damaged


def test_a_bad_checksum_before_valid_records_is_corruption_and_changes_nothing(
    tmp_path: Path,
) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    _fill(j, 1, 6)
    j.sync()
    with open(j.path, "r+b") as f:
        f.seek(j._offsets[2] + HEADER.size + 3)  # inside record 3's command
        f.write(b"#")
    before = Path(j.path).read_bytes()
    with pytest.raises(JournalCorruptedError, match=r"index 3.*checksum.*index 4"):
        DurableJournal(OsDisk(), str(tmp_path))
    assert Path(j.path).read_bytes() == before  # nothing was cut


def test_a_complete_last_record_with_a_bad_checksum_is_damaged(tmp_path: Path) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    j.setCurrentTerm(3, None)
    _fill(j, 1, 4, term=3)
    j.sync()
    with open(j.path, "r+b") as f:
        f.seek(j.size_bytes - 2)
        f.write(b"#")
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3] and again.tail.damaged
    assert floor_of(again.meta) == (3, 4)


@pytest.mark.parametrize("trailing_zeros", [0, 40])
@pytest.mark.parametrize("at, byte", [(2, 0x40), (1, 0x02)])
def test_a_last_record_whose_length_field_is_damaged_is_damaged_not_torn(
        tmp_path: Path, trailing_zeros: int, at: int, byte: int) -> None:
    """Its length now runs past the file (about 4 MiB more), or past the next sector
    boundary within the preallocated zeros (512 more), as a torn append's would; but the
    record is whole (its command may end in zeros, like the preallocated zeros after
    it)."""
    j = DurableJournal(OsDisk(), str(tmp_path))
    j.setCurrentTerm(3, None)
    _fill(j, 1, 3, term=3)
    j.add(b"last" + bytes(trailing_zeros), 4, 3)
    j.sync()
    last = j.size_bytes - HEADER.size - 4 - trailing_zeros
    with open(j.path, "r+b") as f:
        f.seek(last + at)
        f.write(bytes([byte]))
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3] and again.tail.damaged
    assert floor_of(again.meta) == (3, 4)


@pytest.mark.parametrize("torn_at", [HEADER.size + 3, 12, 20])
def test_a_damaged_length_field_with_a_torn_append_after_it_is_damaged(
        tmp_path: Path, torn_at: int) -> None:
    """The last durable record's length made longer, then the next append torn after
    it (``torn_at`` bytes of it present, down to part of its header's term): the bytes
    read as one longer record torn part-way, yet the record ends where the next
    header begins, so it was whole."""
    j = DurableJournal(OsDisk(), str(tmp_path))
    j.setCurrentTerm(3, None)
    _fill(j, 1, 3, term=3)
    j.add(b"last", 4, 3)
    j.sync()
    last = j.size_bytes - HEADER.size - 4
    with open(j.path, "r+b") as f:
        f.seek(last + 1)  # the length field's second byte: 4 bytes become 260
        f.write(b"\x01")
        f.seek(last + HEADER.size + 4)
        f.write(encode_record(b"never synced", 5, 3)[:torn_at])
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3] and again.tail.damaged
    floor = floor_of(again.meta)
    assert floor is not None and floor >= (3, 4)


def test_a_torn_append_of_a_longer_record_stays_torn(tmp_path: Path) -> None:
    """Whatever its command holds, a record torn part-way is torn, not damaged."""
    j = DurableJournal(OsDisk(), str(tmp_path))
    j.setCurrentTerm(3, None)
    _fill(j, 1, 3, term=3)
    j.sync()
    end = j.size_bytes
    inner = HEADER.pack(1, 0, 5, 3)  # a header of index 5 inside the command
    command = b"a" * 700 + inner + b"b" * 700
    with open(j.path, "r+b") as f:
        f.seek(end)
        f.write(encode_record(command, 4, 3)[:SECTOR * 2 - (end % SECTOR) + 10])
    again = DurableJournal(OsDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == [1, 2, 3] and not again.tail.damaged


def test_a_journal_written_without_preallocation_is_read_and_extended(tmp_path: Path) -> None:
    path = tmp_path / "journal.log"
    path.write_bytes(b"".join(encode_record(f"c{i}".encode(), i, 1) for i in (1, 2, 3)))
    j = DurableJournal(OsDisk(preallocate=4096), str(tmp_path))
    assert [e[1] for e in j[:]] == [1, 2, 3] and j.torn_bytes == 0
    _fill(j, 4, 2)
    j.sync()
    assert os.path.getsize(path) == 4096
    assert _indexes(tmp_path) == [1, 2, 3, 4, 5]


def test_a_full_disk_refuses_the_growth_before_any_record_is_written(tmp_path: Path) -> None:
    disk = FaultyDisk(preallocate=4096)
    j = DurableJournal(disk, str(tmp_path))
    _fill(j, 1, 3)
    j.sync()
    assert os.path.getsize(j.path) == 4096
    before = Path(j.path).read_bytes()
    disk.full = True
    _fill(j, 4, 200)  # more than the preallocated space holds
    with pytest.raises(OSError, match="No space"):
        j.write()
    assert Path(j.path).read_bytes() == before  # no zeros kept, no record half-written
    assert _indexes(tmp_path) == [1, 2, 3]
    disk.full = False
    j.sync()
    assert _indexes(tmp_path) == list(range(1, 204))


def test_a_full_disk_on_a_write_in_place_leaves_only_whole_records(tmp_path: Path) -> None:
    disk = FaultyDisk(preallocate=1 << 16)
    j = DurableJournal(disk, str(tmp_path))
    _fill(j, 1, 3)
    j.sync()
    size = os.path.getsize(j.path)
    disk.full = True
    _fill(j, 4, 3)
    with pytest.raises(OSError, match="No space"):
        j.write()
    data = Path(j.path).read_bytes()
    assert len(data) == size and not data[j._offsets[3] :].strip(b"\0")  # cut back to zeros
    assert _indexes(tmp_path) == [1, 2, 3]
    disk.full = False
    j.sync()
    assert _indexes(tmp_path) == [1, 2, 3, 4, 5, 6]


def test_a_cut_leaves_no_stale_record_behind_a_shorter_one(tmp_path: Path) -> None:
    j = DurableJournal(OsDisk(), str(tmp_path))
    _fill(j, 1, 6, size=40)
    j.sync()
    j.deleteEntriesFrom(2)  # indexes 3.. are replaced by a new leader's shorter entries
    _fill(j, 3, 1, term=2, size=5)
    j.sync()
    data = Path(j.path).read_bytes()
    assert not data[j.size_bytes :].strip(b"\0")
    assert _indexes(tmp_path) == [1, 2, 3]


_WRITER = textwrap.dedent("""
    import sys
    from lazily_queue.raft.disk import OsDisk
    from lazily_queue.raft.journal import DurableJournal
    j = DurableJournal(OsDisk(preallocate=16384), sys.argv[1])
    index = j.last_index
    while True:
        for _ in range(7):
            index += 1
            j.add(b"%08d" % index * 9, index, 1)
        j.sync()
        print(index, flush=True)
""")


def test_kill_9_mid_write_keeps_every_synced_record_and_reopens(tmp_path: Path) -> None:
    for round_ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)], cwd=ROOT,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        synced = 0
        for _ in range(300 + 97 * round_):
            synced = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        found = _indexes(tmp_path)  # no corruption error, no damaged tail
        assert found == list(range(1, len(found) + 1)) and len(found) >= synced
        assert floor_of(DurableJournal(OsDisk(), str(tmp_path)).meta) is None
