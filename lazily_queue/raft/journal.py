"""The durable Raft journal: checksummed records, group-commit fsync, atomic metadata.

Records (see :mod:`.records`) are kept in memory and reach the disk only in
:meth:`DurableJournal.write`, which the caller runs once per step before anything
the step produced may leave: truncations, rewrites and appends are recorded by the
engine's calls and carried out there, so a disk error never interrupts the engine
half-way. :meth:`DurableJournal.fsync` (on a worker thread) makes written records
durable. Term, vote and identity live in two checksummed metadata copies
(:mod:`.meta`) replaced by the same write.

Disk errors never tear the journal: an append that fails part-way is cut back to the
last whole record before anything else is written; after a failed write or fsync,
:meth:`DurableJournal.discard_unsynced` schedules every record not known durable to
be written again (the kernel may have dropped them), so a later successful fsync
covers fresh writes, never the failed one.

On open, a torn tail is cut off with a warning. A damaged record with a valid record
after it raises :class:`JournalCorruptedError` and nothing is applied. A damaged
*last* record (complete but failing its checksum: not what an interrupted append
leaves) is cut off too, but the member then withholds its vote until its log has
caught up past it (the rejoin floor), since that record may have been acknowledged.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import pysyncobj.journal as _ps_journal

from .disk import Disk
from .meta import MetaStore
from .records import (
    HEADER,
    Entry,
    JournalCorruptedError,
    JournalError,
    Tail,
    encode_record,
    read_records,
)
from .rejoin import FLOOR_KEY, floor_of

__all__ = ["DurableJournal", "JournalCorruptedError", "JournalError"]

log = logging.getLogger(__name__)


class DurableJournal(_ps_journal.Journal):  # type: ignore[misc]
    """PySyncObj's journal interface over a :class:`Disk`, durable at :meth:`sync`."""

    def __init__(self, disk: Disk, directory: str, *, name: str = "journal") -> None:
        self._disk = disk
        self._dir = directory
        self.path = f"{directory}/{name}.log"
        self.meta_path = f"{directory}/{name}.meta"
        disk.makedirs(directory)
        self._meta_store = MetaStore(disk, self.meta_path)
        self._entries: list[Entry] = []
        self._offsets: list[int] = []
        # The file holds the records as they are in memory up to ``_base``; ``_pending``
        # goes after it. ``_truncate``: cut the file to ``_base`` first. ``_rewrite``:
        # replace the whole file with the records in memory instead.
        self._base = 0
        self._end = 0
        self._pending = bytearray()
        self._truncate = False
        self._rewrite = False
        self._meta_dirty = False
        # The last index whose record is on disk as it is in memory, once handed to the
        # OS (written) and once made durable; a truncation or rewrite starts a new
        # generation, so an fsync that began before it proves nothing.
        self._written_index = 0
        self._durable_index = 0
        self._generation = 0
        #: What :meth:`prepare_fsync` found for the next detached fsync to cover.
        self._prepared: tuple[int, int] | None = None
        #: Bytes handed to the OS by :meth:`write` so far (records and rewrites).
        self.written_bytes = 0
        self._mask_from: int | None = None
        self.tail = Tail()
        self._meta: dict[str, Any] = self._meta_store.load()
        self._meta_dirty = bool(self._meta_store.repaired)
        self._load()

    # -- loading ----------------------------------------------------------------------------

    def _load(self) -> None:
        data = self._disk.read(self.path) or b""
        found = read_records(data, self.path)
        entries = found.entries
        tail = self.tail = found.tail
        if tail.size:
            last = entries[-1][1] if entries else 0
            if tail.damaged:
                floor = (int(self._meta.get("term", 0)), last + tail.records)
                previous = floor_of(self._meta)
                if previous is not None:
                    floor = max(floor, previous)
                self._meta[FLOOR_KEY] = list(floor)
                # The floor must be durable before the damaged record goes.
                self._meta_store.store(self._meta)
                log.error(
                    "%s: the last record (after index %d) is damaged, not torn; it is cut "
                    "off and the node withholds its vote until its log reaches term %d "
                    "index %d", self.path, last, floor[0], floor[1])
            else:
                log.warning("%s: cut a torn tail of %d bytes after index %s (an unsynced "
                            "write)", self.path, tail.size, last or "none")
        if found.valid < len(data):  # a torn tail, or the zeros of the preallocated end
            self._disk.truncate(self.path, found.valid)
            self._disk.sync(self.path)
        self._entries, self._offsets = entries, found.offsets
        self._base = self._end = found.valid
        self._written_index = self._durable_index = self.last_index

    @property
    def meta_source(self) -> str:
        """The metadata file :attr:`meta` was read from (:attr:`meta_path` when none
        was there, or its copy when only that one was valid)."""
        return self._meta_store.read_from or self.meta_path

    @property
    def meta_damaged(self) -> bool:
        """A metadata copy failed its checks on opening (the next write repairs it)."""
        return self._meta_store.damaged

    @property
    def torn_bytes(self) -> int:
        """Bytes cut off the end of the file when it was opened."""
        return self.tail.size

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
        record = encode_record(command, idx, term)
        if not self._rewrite:
            self._pending += record
        self._entries.append((command, idx, term))
        self._offsets.append(self._end)
        self._end += len(record)

    def clear(self) -> None:
        self._entries, self._offsets = [], []
        self._forget_after(0)
        self._schedule_rewrite()

    def deleteEntriesFrom(self, entryFrom: int) -> None:
        if self._mask_from is not None:
            return
        if entryFrom >= len(self._entries):
            return
        cut = self._offsets[entryFrom]
        self._forget_after(self._entries[entryFrom][1] - 1)
        del self._entries[entryFrom:]
        del self._offsets[entryFrom:]
        self._end = cut
        if self._rewrite:
            return
        if cut >= self._base:
            del self._pending[cut - self._base :]
        else:
            self._pending.clear()
            self._base = cut
            self._truncate = True

    def deleteEntriesTo(self, entryTo: int) -> None:
        del self._entries[:entryTo]
        self._schedule_rewrite()

    def _forget_after(self, index: int) -> None:
        self._generation += 1
        self._written_index = min(self._written_index, index)
        self._durable_index = min(self._durable_index, index)

    def _schedule_rewrite(self) -> None:
        self._generation += 1
        self._rewrite = True
        self._truncate = False
        self._pending.clear()
        self._offsets = []
        pos = 0
        for command, _, _ in self._entries:
            self._offsets.append(pos)
            pos += HEADER.size + len(command)
        self._base = self._end = pos

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
    def durable_index(self) -> int:
        """The last index known to be on disk durably as it is in memory."""
        return self._durable_index

    @property
    def size_bytes(self) -> int:
        """The bytes of the records held (the file's size once written)."""
        return self._end

    @property
    def first_index(self) -> int:
        return self._entries[0][1] if self._entries else 0

    @property
    def needs_sync(self) -> bool:
        return bool(self._pending or self._truncate or self._rewrite or self._meta_dirty)

    @property
    def meta(self) -> dict[str, Any]:
        return self._meta

    def set_meta(self, key: str, value: Any) -> None:
        """Store an extra metadata field (written by the next :meth:`write`)."""
        self._meta[key] = value
        self._meta_dirty = True

    def sync(self) -> None:
        """Write buffered records and metadata, then make both durable."""
        if self.write():
            self._disk.sync(self.path)
            self._durable_index = self._written_index

    def write(self) -> bool:
        """Carry out recorded truncations, rewrites and appends and replace the metadata.

        Returns True when records were appended or cut that still need :meth:`fsync`. Raises
        ``OSError`` when the disk refuses; whatever was not done stays recorded for the
        next call, and a partial append is cut off first.
        """
        wrote = False
        if self._rewrite:
            data = b"".join(encode_record(*e) for e in self._entries)
            self._disk.replace(self.path, data)
            self.written_bytes += len(data)
            self._rewrite = False
            self._base = self._end = len(data)
            self._generation += 1
            self._written_index = self._durable_index = self.last_index
        else:
            if self._truncate:
                self._disk.truncate(self.path, self._base)
                self._truncate = False
                wrote = True
            if self._pending:
                try:
                    self._disk.append(self.path, bytes(self._pending))
                except OSError:
                    self._cut_partial_append()
                    raise
                self._base += len(self._pending)
                self.written_bytes += len(self._pending)
                self._pending.clear()
                self._written_index = self.last_index
                wrote = True
        if self._meta_dirty:
            # The commit index saved may only cover records already durable: after a
            # crash, entries it covers are applied without asking anyone, so an entry
            # still only in memory (or a truncation not yet durable) must not be.
            meta = dict(self._meta)
            meta["commit"] = max(1, min(int(meta.get("commit", 1)), self._durable_index))
            self._meta_store.store(meta)
            self._meta_dirty = False
        return wrote

    def _cut_partial_append(self) -> None:
        """An append failed part-way: the file must end at the last whole record again
        before anything else is written (now, or first thing at the next write)."""
        self._truncate = True
        with contextlib.suppress(OSError):
            self._disk.truncate(self.path, self._base)
            self._truncate = False

    def prepare_fsync(self) -> None:
        """On the writing thread, right before a detached :meth:`fsync` is handed to
        another thread: that fsync covers the records handed to the OS so far, and
        starts without first opening the file."""
        self._prepared = (self._generation, self._written_index)
        self._disk.prepare_sync(self.path)

    def fsync(self, *, detached: bool = True) -> None:
        """Make records handed to the OS durable; safe to call from a worker thread.
        ``detached=False``: the caller is the thread that writes the journal, which may
        use the descriptor it appends through."""
        if detached:
            prepared, self._prepared = self._prepared, None
            generation, target = prepared or (self._generation, self._written_index)
            self._disk.sync_detached(self.path)
        else:
            generation, target = self._generation, self._written_index
            self._disk.sync(self.path)
        if generation == self._generation:
            self._durable_index = max(self._durable_index, target)

    def discard_unsynced(self) -> None:
        """After a failed write or fsync: treat every record not known durable as lost
        from the file and write it again from memory at the next :meth:`write`."""
        self._generation += 1
        self._written_index = self._durable_index
        if self._rewrite:
            return
        first = self._position(self._durable_index + 1)
        if first is None:
            if self._entries and self._durable_index < self._entries[0][1]:
                first = 0
            else:
                self._base, self._truncate = self._end, True
                self._pending.clear()
                return
        self._base = self._offsets[first]
        self._pending = bytearray(b"".join(encode_record(*e) for e in self._entries[first:]))
        self._truncate = True
