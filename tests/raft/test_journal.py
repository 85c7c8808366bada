"""The durable journal: records, torn tails, corruption, truncation, metadata."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal, JournalCorruptedError, JournalError
from lazily_queue.raft.meta import encode_meta
from lazily_queue.raft.records import HEADER, decode_records, encode_record
from lazily_queue.raft.rejoin import floor_of


def _journal(path: Path, *, sync: bool = False) -> DurableJournal:
    return DurableJournal(OsDisk(sync=sync), str(path))


def _fill(j: DurableJournal, n: int, start: int = 1, term: int = 1) -> None:
    for i in range(start, start + n):
        j.add(f"cmd{i}".encode(), i, term)


def test_records_survive_reopen(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 5)
    j.setCurrentTerm(3, "2")
    j.sync()
    again = _journal(tmp_path)
    assert [e[1] for e in again[:]] == [1, 2, 3, 4, 5]
    assert again[2] == (b"cmd3", 3, 1)
    assert again.getCurrentTerm() == 3 and again.getVotedForNodeId() == "2"


def test_unsynced_records_are_not_on_disk(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 3)
    assert j.needs_sync
    assert len(_journal(tmp_path)) == 0
    j.sync()
    assert not j.needs_sync
    assert len(_journal(tmp_path)) == 3


def test_torn_tail_is_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    j = _journal(tmp_path)
    _fill(j, 4)
    j.sync()
    size = j.size_bytes
    torn = encode_record(b"half-written" * 100, 5, 1)
    with open(j.path, "r+b") as f:  # it reached the disk up to a sector boundary
        f.seek(size)
        f.write(torn[: 512 - size % 512])
    again = _journal(tmp_path)
    assert len(again) == 4
    assert again.torn_bytes > 0
    assert os.path.getsize(j.path) == size
    assert "torn tail" in caplog.text
    again.add(b"next", 5, 1)
    again.sync()
    assert [e[1] for e in _journal(tmp_path)[:]] == [1, 2, 3, 4, 5]


def test_zero_filled_tail_is_torn(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 2)
    j.sync()
    with open(j.path, "ab") as f:
        f.write(b"\0" * 100)
    assert len(_journal(tmp_path)) == 2


@pytest.mark.parametrize("foreign", [
    b"id = 1\ncluster = \"orders\"\n" * 40,  # a configuration copied over the journal
    bytes(range(256)) * 8,
])
def test_a_journal_replaced_by_other_bytes_is_damaged_not_torn(tmp_path: Path,
                                                             foreign: bytes) -> None:
    j = _journal(tmp_path)
    _fill(j, 5, term=2)
    j.setCurrentTerm(2, "1")
    j.sync()
    with open(j.path, "r+b") as f:
        f.write(foreign)
    again = _journal(tmp_path)
    assert len(again) == 0
    assert again.tail.damaged  # the member withholds its vote until it has caught up
    assert floor_of(again._meta) is not None


def test_corrupted_record_with_valid_records_after_it_is_refused(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 5)
    j.sync()
    data = bytearray(open(j.path, "rb").read())
    offset = j._offsets[2] + HEADER.size + 1  # a byte inside record 3's command
    data[offset] ^= 0x01  # a single flipped bit
    open(j.path, "wb").write(bytes(data))
    with pytest.raises(JournalCorruptedError, match=r"index 3.*checksum"):
        _journal(tmp_path)


def test_non_consecutive_indexes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.log"
    tmp_path.mkdir(exist_ok=True)
    path.write_bytes(encode_record(b"a", 1, 1) + encode_record(b"b", 3, 1))
    with pytest.raises(JournalCorruptedError, match="consecutive"):
        _journal(tmp_path)


def test_delete_from_in_buffer_and_on_disk(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 6)
    j.sync()
    _fill(j, 3, start=7)
    j.deleteEntriesFrom(7)  # positions 7.. are indexes 8.. (buffered)
    j.sync()
    assert [e[1] for e in _journal(tmp_path)[:]] == [1, 2, 3, 4, 5, 6, 7]
    j.deleteEntriesFrom(3)  # on disk
    _fill(j, 2, start=4, term=2)
    j.sync()
    reopened = _journal(tmp_path)
    assert [(e[1], e[2]) for e in reopened[:]] == [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]


def test_delete_to_rewrites_the_file(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 50)
    j.sync()
    j.deleteEntriesTo(48)
    assert [e[1] for e in j[:]] == [49, 50]
    _fill(j, 1, start=51)
    j.sync()
    assert [e[1] for e in _journal(tmp_path)[:]] == [49, 50, 51]
    assert os.path.getsize(j.path) < 200


def test_drop_before_index(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 10)
    j.sync()
    j.drop_before(7)
    assert j.first_index == 7 and j.last_index == 10


def test_out_of_order_append_is_refused(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 2)
    with pytest.raises(JournalError, match="append of index 5 after 2"):
        j.add(b"x", 5, 1)


def test_masked_tail_hides_entries_from_an_open_slice(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    _fill(j, 6)
    j.mask_tail_after(3)
    assert [e[1] for e in j[2:]] == [3]
    assert [e[1] for e in j[2:4]] == [3, 4]
    j.deleteEntriesFrom(3)
    assert len(j) == 6
    j.mask_tail_after(None)
    assert [e[1] for e in j[2:]] == [3, 4, 5, 6]


def test_metadata_is_replaced_atomically(tmp_path: Path) -> None:
    j = _journal(tmp_path, sync=True)
    j.setCurrentTerm(5, "1")
    j.sync()
    assert not os.path.exists(j.meta_path + ".tmp")
    open(j.meta_path, "wb").write(b"\xff\x00garbage")
    again = _journal(tmp_path)  # the second copy holds the same term and vote
    assert (again.getCurrentTerm(), again.getVotedForNodeId()) == (5, "1")
    assert again.meta_damaged and again.needs_sync
    again.sync()
    assert not _journal(tmp_path).meta_damaged  # both copies rewritten
    for path in (j.meta_path, j.meta_path + ".b"):
        open(path, "wb").write(b"\xff\x00garbage")
    with pytest.raises(JournalError, match="both copies"):
        _journal(tmp_path)


def test_a_flipped_bit_anywhere_in_a_metadata_copy_is_found(tmp_path: Path) -> None:
    j = _journal(tmp_path, sync=True)
    j.setCurrentTerm(7, "2")
    j.sync()
    raw = open(j.meta_path, "rb").read()
    for offset in range(len(raw)):
        for bit in range(8):
            damaged = bytearray(raw)
            damaged[offset] ^= 1 << bit
            open(j.meta_path, "wb").write(bytes(damaged))
            again = _journal(tmp_path)
            assert again.meta_damaged, (offset, bit)
            assert (again.getCurrentTerm(), again.getVotedForNodeId()) == (7, "2")


def test_fsync_modes(tmp_path: Path) -> None:
    on = OsDisk(sync=True)
    j = DurableJournal(on, str(tmp_path / "on"))
    _fill(j, 2)
    j.setCurrentTerm(1, None)
    j.sync()
    assert on.fsyncs >= 2  # the records, and the metadata file plus its directory
    off = OsDisk(sync=False)
    k = DurableJournal(off, str(tmp_path / "off"))
    _fill(k, 2)
    k.setCurrentTerm(1, None)
    k.sync()
    assert off.fsyncs == 0
    assert len(DurableJournal(OsDisk(), str(tmp_path / "off"))) == 2


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_decoder_never_crashes_on_garbage(data: bytes) -> None:
    try:
        entries, offsets, valid = decode_records(data)
    except JournalCorruptedError:
        return
    assert valid <= len(data)
    assert len(entries) == len(offsets)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=40), min_size=1, max_size=20),
    st.integers(min_value=0, max_value=10_000),
)
def test_any_truncation_point_recovers_a_prefix(commands: list[bytes], cut: int) -> None:
    data = b"".join(encode_record(c, i + 1, 1) for i, c in enumerate(commands))
    cut = cut % (len(data) + 1)
    entries, _, valid = decode_records(data[:cut])
    assert [e[0] for e in entries] == commands[: len(entries)]
    assert valid <= cut


@pytest.mark.parametrize("field, value", [
    ("term", "x"), ("term", -1), ("term", True), ("commit", "zz"), ("voted_for", [1]),
    ("rejoin_floor", ["a", None]), ("rejoin_floor", [1]), ("node", 5), ("cluster", [1]),
    ("incarnation", 7), ("peer_incarnations", [1]), ("peer_incarnations", {"2": 3}),
])
def test_a_checksummed_metadata_copy_with_a_field_of_the_wrong_type_is_damaged(
    tmp_path: Path, field: str, value: object
) -> None:
    """Not a traceback when the node reads it (one copy: the other is used; both: refused)."""
    j = _journal(tmp_path, sync=True)
    j.setCurrentTerm(4, "2")
    j.sync()
    meta = {**j.meta, field: value}
    open(j.meta_path, "wb").write(encode_meta(meta, 1000))
    again = _journal(tmp_path)
    assert again.meta_damaged
    assert (again.getCurrentTerm(), again.getVotedForNodeId()) == (4, "2")
    open(j.meta_path + ".b", "wb").write(encode_meta(meta, 1001))
    with pytest.raises(JournalError, match="both copies"):
        _journal(tmp_path)
