"""The durable Raft journal: checksummed records, group-commit fsync, atomic metadata.

Record layout (little endian)::

    u32 command length | u32 crc32(index, term, command) | u64 index | u64 term | command

Appends are buffered in memory and written by :meth:`DurableJournal.sync`, which the
driver calls once per tick before any message or acknowledgement leaves the node: one
write and one fsync cover everything the tick produced. Term and vote live in a small
CBOR metadata file replaced atomically (file and directory fsynced) by the same sync.

On open a torn tail (an incomplete or unreadable last record) is cut off with a
warning; a record that fails its checksum while a valid record follows it anywhere in
the file, or indexes that are not consecutive, raise :class:`JournalCorruptedError`
and nothing is applied.
"""

from __future__ import annotations

import logging
import struct
import zlib
from typing import Any

import cbor2
import pysyncobj.journal as _ps_journal

from .disk import Disk

log = logging.getLogger(__name__)

HEADER = struct.Struct("<IIQQ")
META_VERSION = 1

Entry = tuple[bytes, int, int]


class JournalError(Exception):
    """The journal or its metadata cannot be used."""


class JournalCorruptedError(JournalError):
    """A record in the middle of the journal failed its checksum or ordering check."""


def _crc(index: int, term: int, command: bytes) -> int:
    return zlib.crc32(command, zlib.crc32(struct.pack("<QQ", index, term))) & 0xFFFFFFFF


def encode_record(command: bytes, index: int, term: int) -> bytes:
    return HEADER.pack(len(command), _crc(index, term, command), index, term) + command


def decode_records(data: bytes, path: str = "journal") -> tuple[list[Entry], list[int], int]:
    """Parse records; return entries, their offsets and the length of the valid prefix."""
    entries: list[Entry] = []
    offsets: list[int] = []
    pos = 0
    size = len(data)
    while pos < size:
        if size - pos < HEADER.size:
            break
        length, crc, index, term = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + length
        if end > size or _crc(index, term, bytes(data[pos + HEADER.size : end])) != crc:
            # A torn write only leaves garbage at the very end; a valid record anywhere
            # after this one (a flipped length field misplaces "the end") is corruption.
            last = entries[-1] if entries else None
            found = _valid_record_after(data, pos + 1, last[1] if last else None,
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
    return entries, offsets, pos


def _valid_record_after(
    data: bytes, start: int, last_index: int | None, last_term: int
) -> int | None:
    """The index of a record passing its checksum that starts at or after ``start``.

    Only headers that could follow ``last_index`` / ``last_term`` are checksummed, so
    scanning a torn tail stays cheap (``None``: the first record of the file is bad).
    """
    size = len(data)
    most = (size - start) // HEADER.size + 1
    for pos in range(start, size - HEADER.size + 1):
        length, crc, index, term = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + length
        if end > size or index < 1 or term < last_term:
            continue
        if last_index is not None and not 0 < index - last_index <= most:
            continue
        if _crc(index, term, bytes(data[pos + HEADER.size : end])) == crc:
            return int(index)
    return None


class DurableJournal(_ps_journal.Journal):  # type: ignore[misc]
    """PySyncObj's journal interface over a :class:`Disk`, durable at :meth:`sync`."""

    def __init__(self, disk: Disk, directory: str, *, name: str = "journal") -> None:
        self._disk = disk
        self._dir = directory
        self.path = f"{directory}/{name}.log"
        self.meta_path = f"{directory}/{name}.meta"
        disk.makedirs(directory)
        self._entries: list[Entry] = []
        self._offsets: list[int] = []
        self._file_size = 0
        self._pending = bytearray()
        self._pending_start = 0
        self._dirty = False
        self._meta_dirty = False
        # The last index whose record is on disk as it is in memory, once handed to the
        # OS (written) and once made durable; a truncation or rewrite starts a new
        # generation, so an fsync that began before it proves nothing.
        self._written_index = 0
        self._durable_index = 0
        self._generation = 0
        self._mask_from: int | None = None
        self.torn_bytes = 0
        self._meta: dict[str, Any] = self._load_meta()
        self._load()

    # -- loading ----------------------------------------------------------------------------

    def _load_meta(self) -> dict[str, Any]:
        raw = self._disk.read(self.meta_path)
        if raw is None:
            return {"version": META_VERSION, "term": 0, "voted_for": None, "commit": 1}
        try:
            meta = cbor2.loads(raw)
        except Exception as exc:
            raise JournalError(
                f"{self.meta_path}: unreadable metadata ({exc}); it is replaced atomically, so "
                "this is not a torn write. Restore the node's data directory from a backup or "
                "remove it and let the node rejoin empty."
            ) from exc
        if not isinstance(meta, dict) or meta.get("version") != META_VERSION:
            raise JournalError(f"{self.meta_path}: unknown metadata format {meta!r}")
        return meta

    def _load(self) -> None:
        data = self._disk.read(self.path) or b""
        entries, offsets, valid = decode_records(data, self.path)
        if valid < len(data):
            self.torn_bytes = len(data) - valid
            log.warning(
                "%s: cut a torn tail of %d bytes after index %s (an unsynced write)",
                self.path,
                self.torn_bytes,
                entries[-1][1] if entries else "none",
            )
            self._disk.truncate(self.path, valid)
            self._disk.sync(self.path)
        self._entries, self._offsets, self._file_size = entries, offsets, valid
        self._written_index = self._durable_index = self.last_index

    def drop_before(self, index: int) -> None:
        """Forget entries below ``index`` (they are covered by the snapshot)."""
        pos = self._position(index)
        if pos is not None and pos > 0:
            self.deleteEntriesTo(pos)

    def _position(self, index: int) -> int | None:
        if not self._entries:
            return None
        pos = index - self._entries[0][1]
        return pos if 0 <= pos < len(self._entries) else None

    # -- the PySyncObj journal interface ----------------------------------------------------

    def add(self, command: bytes, idx: int, term: int) -> None:
        command = bytes(command)
        if self._entries and idx != self._entries[-1][1] + 1:
            raise JournalError(f"append of index {idx} after {self._entries[-1][1]}")
        if not self._pending:
            self._pending_start = self._file_size
        offset = self._pending_start + len(self._pending)
        self._pending += encode_record(command, idx, term)
        self._entries.append((command, idx, term))
        self._offsets.append(offset)
        self._dirty = True

    def clear(self) -> None:
        self._entries, self._offsets = [], []
        self._rewrite()

    def deleteEntriesFrom(self, entryFrom: int) -> None:
        if self._mask_from is not None:
            return
        if entryFrom >= len(self._entries):
            return
        cut = self._offsets[entryFrom]
        self._forget_after(self._entries[entryFrom][1] - 1)
        del self._entries[entryFrom:]
        del self._offsets[entryFrom:]
        if cut >= self._pending_start and self._pending:
            del self._pending[cut - self._pending_start :]
        else:
            self._pending.clear()
            self._disk.truncate(self.path, cut)
            self._file_size = cut
        self._dirty = True

    def deleteEntriesTo(self, entryTo: int) -> None:
        del self._entries[:entryTo]
        self._rewrite()

    def _forget_after(self, index: int) -> None:
        self._generation += 1
        self._written_index = min(self._written_index, index)
        self._durable_index = min(self._durable_index, index)

    def _rewrite(self) -> None:
        data = b"".join(encode_record(*e) for e in self._entries)
        self._disk.replace(self.path, data)
        self._generation += 1
        self._written_index = self._durable_index = self.last_index
        self._pending.clear()
        self._offsets = []
        pos = 0
        for command, _, _ in self._entries:
            self._offsets.append(pos)
            pos += HEADER.size + len(command)
        self._file_size = pos

    def __getitem__(self, item: Any) -> Any:
        if (
            self._mask_from is not None
            and isinstance(item, slice)
            and item.stop is None
            and item.start is not None
            and item.start >= 0
            and self._entries
            and self._entries[0][1] + item.start == self._mask_from
        ):
            return self._entries[item.start : item.start + 1]
        return self._entries[item]

    def __len__(self) -> int:
        return len(self._entries)

    def _destroy(self) -> None:
        self.sync()

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:
        self._meta["commit"] = raftCommitIndex

    def getRaftCommitIndex(self) -> int:
        return int(self._meta.get("commit", 1))

    def setCurrentTerm(self, term: int, votedForNodeId: Any) -> None:
        self._meta["term"] = term
        self._meta["voted_for"] = votedForNodeId
        self._meta_dirty = True

    def getCurrentTerm(self) -> int:
        return int(self._meta.get("term", 0))

    def getVotedForNodeId(self) -> Any:
        return self._meta.get("voted_for")

    def onOneSecondTimer(self) -> None:
        """The commit index is an optimisation; it is saved with the next metadata write."""

    # -- our additions ------------------------------------------------------------------------

    def mask_tail_after(self, index: int | None) -> None:
        """While set, a "from ``index`` on" slice shows only that entry, and nothing truncates."""
        self._mask_from = index

    def term_at(self, index: int) -> int | None:
        pos = self._position(index)
        return None if pos is None else self._entries[pos][2]

    @property
    def last_index(self) -> int:
        return self._entries[-1][1] if self._entries else 0

    @property
    def first_index(self) -> int:
        return self._entries[0][1] if self._entries else 0

    @property
    def needs_sync(self) -> bool:
        return self._dirty or self._meta_dirty

    @property
    def meta(self) -> dict[str, Any]:
        return self._meta

    def set_meta(self, key: str, value: Any) -> None:
        """Store an extra metadata field (written by the next :meth:`sync`)."""
        self._meta[key] = value
        self._meta_dirty = True

    def sync(self) -> None:
        """Write buffered records and metadata, then make both durable."""
        if self.write():
            self._disk.sync(self.path)
            self._durable_index = self._written_index

    def write(self) -> bool:
        """Hand buffered records to the OS and replace the metadata durably.

        Returns True when records were written that still need :meth:`fsync`.
        """
        wrote = bool(self._dirty)
        if self._dirty:
            if self._pending:
                self._disk.append(self.path, bytes(self._pending))
                self._file_size = self._pending_start + len(self._pending)
                self._pending.clear()
                self._written_index = self.last_index
            self._dirty = False
        if self._meta_dirty:
            # The commit index saved may only cover records already durable: after a
            # crash, entries it covers are applied without asking anyone, so an entry
            # still only in memory (or a truncation not yet durable) must not be.
            meta = dict(self._meta)
            meta["commit"] = max(1, min(int(meta.get("commit", 1)), self._durable_index))
            self._disk.replace(self.meta_path, cbor2.dumps(meta))
            self._meta_dirty = False
        return wrote

    def fsync(self) -> None:
        """Make records handed to the OS durable; safe to call from a worker thread."""
        generation, target = self._generation, self._written_index
        self._disk.sync_detached(self.path)
        if generation == self._generation:
            self._durable_index = max(self._durable_index, target)
