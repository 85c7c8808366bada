"""The journal's record format and what reading it back can find.

Record layout (little endian)::

    u32 command length | u32 crc32(index, term, command) | u64 index | u64 term | command

The file is preallocated (:mod:`.disk`): zeros follow the last record, and a record is
written over zeros in place. Reading stops at the first record that does not check
out. What follows it decides what happened: a valid record anywhere after it means the
file was damaged in the middle (:class:`JournalCorruptedError`); only zeros after it is
the end of the log; otherwise the end is cut off, and :class:`Tail` says whether that
end can only be a torn write (a strict prefix of the record being written, or a record
whose bytes from a sector boundary on never arrived, reading as zeros) or may be a
damaged record that was already durable.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from ..errors import DamagedData

HEADER = struct.Struct("<IIQQ")
#: The unit a disk writes whole: an interrupted write leaves whole sectors old or new.
SECTOR = 512

Entry = tuple[bytes, int, int]

#: No journal record holds a higher term: a first header claiming one is not a torn
#: append but other bytes (a file copied over the journal, say).
MAX_TERM = 1 << 40


class JournalError(DamagedData):
    """The journal or its metadata cannot be used."""


class JournalCorruptedError(JournalError):
    """A record in the middle of the journal failed its checksum or ordering check."""


def record_crc(index: int, term: int, command: bytes) -> int:
    return zlib.crc32(command, zlib.crc32(struct.pack("<QQ", index, term))) & 0xFFFFFFFF


def encode_record(command: bytes, index: int, term: int) -> bytes:
    return HEADER.pack(len(command), record_crc(index, term, command), index, term) + command


@dataclass(frozen=True)
class Tail:
    """What was cut off the end of a journal on reading it."""

    size: int = 0
    #: The cut bytes may hold records that were durable (not only a torn append).
    damaged: bool = False
    #: At most this many records can have been lost with the cut bytes.
    records: int = 0


@dataclass(frozen=True)
class Records:
    entries: list[Entry]
    offsets: list[int]
    #: Length of the valid prefix of the file.
    valid: int
    tail: Tail


def decode_records(data: bytes, path: str = "journal") -> tuple[list[Entry], list[int], int]:
    """Parse records; return entries, their offsets and the length of the valid prefix."""
    found = read_records(data, path)
    return found.entries, found.offsets, found.valid


def read_records(data: bytes, path: str = "journal") -> Records:
    """Parse records and classify what follows the last valid one (see the module doc)."""
    entries: list[Entry] = []
    offsets: list[int] = []
    pos = 0
    size = len(data)
    content = _content_end(data)
    while size - pos >= HEADER.size and pos < content:
        length, crc, index, term = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + length
        if end > size or record_crc(index, term, bytes(data[pos + HEADER.size : end])) != crc:
            last = entries[-1] if entries else None
            found = _valid_record_after(data, pos + 1, content, last[1] if last else None,
                                        last[2] if last else 0)
            if found is not None:
                raise JournalCorruptedError(
                    f"{path}: record at byte {pos} (index {index}) fails its checksum and a "
                    f"valid record (index {found}) follows it; the journal is corrupted. "
                    "Nothing was applied. Restore this node from its peers: stop it and run "
                    "`lazily-queue rejoin --config FILE` (or lazily_queue.raft.rejoin."
                    "wipe_for_rejoin), which keeps the term and vote and withholds the "
                    "node's vote until it has caught up; never just delete the data directory."
                )
            break
        command = bytes(data[pos + HEADER.size : end])
        if entries and index != entries[-1][1] + 1:
            raise JournalCorruptedError(
                f"{path}: record at byte {pos} has index {index} after index "
                f"{entries[-1][1]}; indexes must be consecutive. Nothing was applied."
            )
        entries.append((command, index, term))
        offsets.append(pos)
        pos = end
    return Records(entries, offsets, pos, _classify(data, pos, content, entries))


def _content_end(data: bytes) -> int:
    """Where the zeros at the end of ``data`` begin (its length when it ends otherwise)."""
    return len(data.rstrip(b"\x00"))


def _classify(data: bytes, pos: int, content: int, entries: list[Entry]) -> Tail:
    """Whether the bytes from ``pos`` up to ``content`` (zeros after it) can only be a
    torn write."""
    size = len(data)
    cut = content - pos
    if cut <= 0:
        return Tail()  # only zeros: the preallocated end of the file
    records = max(1, cut // HEADER.size)
    # Zeros from this sector boundary on: a write that reached the disk only up to it.
    zeros_from = -(-content // SECTOR) * SECTOR
    if cut < HEADER.size or pos + HEADER.size > zeros_from:
        return Tail(cut, False, records)
    length, crc, index, term = HEADER.unpack_from(data, pos)
    end = pos + HEADER.size + length
    last = entries[-1] if entries else None
    if last is None:  # any index may come first (after compaction): a sane term, then
        plausible = index >= 1 and 1 <= term <= MAX_TERM
    else:
        plausible = index == last[1] + 1 and term >= last[2]
    if plausible and end > zeros_from and _whole_record_before_next(
            data, pos, content, index, term, crc):
        # A damaged length field made the record look longer, and the next record's
        # append was torn after it: the record ends where that next header starts.
        return Tail(cut, True, records)
    if plausible and size >= end > zeros_from:
        # The write may have reached the disk only up to that boundary, the zeros before
        # it being the command's own; unless the bytes present, with none or some of
        # those zeros, are already the whole record (a damaged length field).
        damaged = _whole_record_within(data, pos, content, index, term, crc, end)
        return Tail(cut, damaged, records)
    if end > size and plausible:
        # The header announces more than the file holds. A torn append leaves exactly
        # that; a damaged length field does too, unless the bytes present are the
        # whole record (its checksum does not cover the length), which may end in some
        # of the zeros that follow.
        if _whole_record_within(data, pos, content, index, term, crc):
            return Tail(cut, True, records)
        return Tail(cut, False, records)
    # A complete record that fails its checksum, or a header that cannot follow the
    # last valid record: not what an interrupted append leaves behind.
    return Tail(cut, True, records)


def _whole_record_within(
    data: bytes, pos: int, content: int, index: int, term: int, crc: int,
    limit: int | None = None,
) -> bool:
    """Whether the bytes from the header at ``pos`` to ``content``, followed by none or
    some of the zeros after it (up to ``limit``, the file's end by default), are a
    record whose checksum is ``crc``."""
    running = zlib.crc32(data[pos + HEADER.size : content],
                         zlib.crc32(struct.pack("<QQ", index, term)))
    for _ in range(min(len(data), len(data) if limit is None else limit) - content):
        if running & 0xFFFFFFFF == crc:
            return True
        running = zlib.crc32(b"\x00", running)
    return running & 0xFFFFFFFF == crc


def _whole_record_before_next(
    data: bytes, pos: int, content: int, index: int, term: int, crc: int
) -> bool:
    """Whether the record at ``pos`` checks out when cut where a header that can follow
    it begins (index ``index + 1``, a term not lower, found by its index field; the
    bytes after that index field may be torn away)."""
    body = pos + HEADER.size
    needle = struct.pack("<Q", index + 1)
    limit = min(len(data), content + len(needle))
    at = data.find(needle, body + 8, limit)
    while at != -1:
        start = at - 8  # the index field sits 8 bytes into a header
        following = data[at + 8 : at + 16]
        later = len(following) < 8 or struct.unpack("<Q", following)[0] >= term
        if later and record_crc(index, term, bytes(data[body:start])) == crc:
            return True
        at = data.find(needle, at + 1, limit)
    return False


def _valid_record_after(
    data: bytes, start: int, content: int, last_index: int | None, last_term: int
) -> int | None:
    """The index of a record passing its checksum that starts at or after ``start`` and
    before ``content`` (the zeros after it hold no header).

    Only headers that could follow ``last_index`` / ``last_term`` are checksummed, so
    scanning a torn tail stays cheap (``None``: the first record of the file is bad).
    """
    size = len(data)
    most = (content - start) // HEADER.size + 1
    for pos in range(start, min(content, size - HEADER.size + 1)):
        length, crc, index, term = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + length
        if end > size or index < 1 or term < last_term:
            continue
        if last_index is not None and not 0 < index - last_index <= most:
            continue
        if record_crc(index, term, bytes(data[pos + HEADER.size : end])) == crc:
            return int(index)
    return None


def scan_newest(data: bytes) -> tuple[int, int]:
    """The largest ``(term, index)`` of any record in ``data`` whose checksum passes."""
    best = (0, 0)
    pos, size = 0, len(data)
    content = _content_end(data)
    while pos + HEADER.size <= size and pos < content:
        length, crc, index, term = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + length
        if end <= size and record_crc(index, term, bytes(data[pos + HEADER.size : end])) == crc:
            best = max(best, (term, index))
            pos = end
        else:
            pos += 1
    return best
