"""A simulated :class:`~lazily_queue.raft.disk.Disk` that loses unsynced writes on a crash.

Each file keeps its durable bytes (what survives a crash) and its current bytes (what
reads see). ``sync`` makes the current bytes durable; ``replace`` and ``remove`` are
atomic and durable. :meth:`SimDisk.crash` resets every file to its durable bytes,
except that an append not yet synced may survive in part (a torn record), decided
by the simulator's random generator. Faults can flip a bit of the durable bytes of
a file or remove a range of them, fill the disk (appends write part of their data and
raise ``ENOSPC``, replacements and fsyncs fail) or fail fsyncs with ``EIO``; a failed
fsync may drop the unsynced bytes it was meant to save, as Linux may.
"""

from __future__ import annotations

import errno
import os
import random
from dataclasses import dataclass, field

from lazily_queue.raft.records import SECTOR

#: The snapshot file's name: an injected fsync failure also fails its replacement.
SNAPSHOT_NAME = "/snapshot.cbor"


@dataclass
class _File:
    durable: bytes = b""
    current: bytearray = field(default_factory=bytearray)
    #: Written by appends since it was last replaced (a real disk preallocates it).
    appended: bool = False


class SimDisk:
    """In-memory files with durable and volatile parts; one per simulated node."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self.fsyncs = 0
        self.full = False
        self.fsync_errors = 0
        self.failed_writes = 0
        self._rng = random.Random(0)

    # -- the Disk protocol ---------------------------------------------------------------

    def read(self, path: str) -> bytes | None:
        f = self._files.get(path)
        return None if f is None else bytes(f.current)

    def append(self, path: str, data: bytes) -> None:
        f = self._files.setdefault(path, _File())
        f.appended = True
        if self.full:
            self.failed_writes += 1
            f.current += data[: self._rng.randrange(len(data) + 1)]
            raise _error(errno.ENOSPC)
        f.current += data

    def truncate(self, path: str, size: int) -> None:
        f = self._files.setdefault(path, _File())
        del f.current[size:]

    def sync(self, path: str) -> None:
        f = self._files.get(path)
        if f is None:
            return
        if self.full or self.fsync_errors:
            self.failed_writes += 1
            code = errno.ENOSPC if self.full else errno.EIO
            self.fsync_errors = max(0, self.fsync_errors - 1)
            if self._rng.random() < 0.5:
                # The kernel dropped the dirty pages: what reads see now is garbage.
                for i in range(len(f.durable), len(f.current)):
                    f.current[i] = 0
            raise _error(code)
        f.durable = bytes(f.current)
        self.fsyncs += 1

    def sync_detached(self, path: str) -> None:
        self.sync(path)

    def prepare_sync(self, path: str) -> None:
        return None

    def replace(self, path: str, data: bytes) -> None:
        if self.full:
            self.failed_writes += 1
            raise _error(errno.ENOSPC)
        if self.fsync_errors and path.endswith(SNAPSHOT_NAME):
            # The new snapshot's fsync failed: it is not renamed, the previous one stays.
            self.failed_writes += 1
            self.fsync_errors -= 1
            raise _error(errno.EIO)
        self._files[path] = _File(bytes(data), bytearray(data))

    def remove(self, path: str) -> None:
        self._files.pop(path, None)

    def makedirs(self, path: str) -> None:
        return None

    # -- faults --------------------------------------------------------------------------

    def fill(self, rng: random.Random) -> None:
        """The disk is full until :meth:`free`: writes fail part-way with ``ENOSPC``."""
        self.full = True
        self._rng = rng

    def free(self) -> None:
        self.full = False

    def fail_fsyncs(self, count: int, rng: random.Random) -> None:
        """The next ``count`` fsyncs fail with ``EIO``."""
        self.fsync_errors = count
        self._rng = rng

    def crash(self, rng: random.Random) -> int:
        """Lose what was not synced; an unsynced append may survive torn. Returns bytes kept.

        Half the time the file behaves as a preallocated one (:mod:`lazily_queue.raft.disk`):
        what survives of the unsynced append ends at a sector boundary and zeros follow."""
        kept = 0
        for f in self._files.values():
            extra = len(f.current) - len(f.durable)
            survive = 0
            preallocated = f.appended and rng.random() < 0.5
            if extra > 0 and bytes(f.current[: len(f.durable)]) == f.durable:
                # The unsynced tail may have reached the platters in part.
                if rng.random() < 0.5:
                    survive = rng.randrange(extra + 1)
                    if preallocated:
                        end = (len(f.durable) + survive) // SECTOR * SECTOR
                        survive = max(0, end - len(f.durable))
            f.current = bytearray(f.current[: len(f.durable) + survive])
            if survive == 0:
                f.current = bytearray(f.durable)
            if preallocated and f.current:
                f.current += bytes(rng.randrange(1, 3 * SECTOR))
            f.durable = bytes(f.current)
            kept += survive
        return kept

    def flip_bit(self, path: str, offset: int, bit: int) -> None:
        """Flip one bit of the durable (and current) bytes of ``path``."""
        f = self._files[path]
        data = bytearray(f.durable)
        data[offset] ^= 1 << bit
        f.durable = bytes(data)
        if offset < len(f.current):
            f.current[offset] ^= 1 << bit

    def punch(self, path: str, start: int, end: int) -> None:
        """Remove bytes ``start:end`` of the durable file (a record lost its end)."""
        f = self._files[path]
        f.durable = f.durable[:start] + f.durable[end:]
        f.current = bytearray(f.durable)

    def durable_bytes(self, path: str) -> bytes:
        f = self._files.get(path)
        return b"" if f is None else f.durable

    def durable_size(self, path: str) -> int:
        f = self._files.get(path)
        return 0 if f is None else len(f.durable)

    def wipe(self, prefix: str) -> None:
        """Remove every file under ``prefix`` (a node's data directory moved away)."""
        for path in [p for p in self._files if p.startswith(prefix)]:
            del self._files[path]

    def digest(self) -> list[tuple[str, int, int]]:
        """Per file: path, durable size, current size (for traces)."""
        return [(p, len(f.durable), len(f.current)) for p, f in sorted(self._files.items())]


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))
