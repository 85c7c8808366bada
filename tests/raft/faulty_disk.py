"""A real disk whose writes and fsyncs a test can make fail or block."""

from __future__ import annotations

import errno
import os
import threading

from lazily_queue.raft.disk import PREALLOCATE, OsDisk


class FaultyDisk(OsDisk):
    """``OsDisk`` plus switches: ``full`` (a write into the file, a record or the zeros
    that extend it, writes half its data, then raises ENOSPC; replacements and fsyncs
    raise ENOSPC), ``ceiling`` (no file grows past that many bytes: a write past it writes
    what fits, then raises ENOSPC), ``fsync_errors`` (the next N fsyncs raise EIO) and
    ``hold_fsyncs`` (fsyncs wait until :meth:`release`)."""

    def __init__(self, *, sync: bool = True, preallocate: int = PREALLOCATE) -> None:
        super().__init__(sync=sync, preallocate=preallocate)
        self.full = False
        self.ceiling: int | None = None
        self.fsync_errors = 0
        self.failures = 0
        self._gate = threading.Event()
        self._gate.set()
        self.waiting = threading.Event()

    def _refuse(self, code: int) -> OSError:
        self.failures += 1
        return OSError(code, os.strerror(code))

    def _write_at(self, fd: int, data: bytes | memoryview, offset: int) -> int:
        if self.full:  # a short write, then ENOSPC for what is left
            if len(data) > 1:
                return super()._write_at(fd, data[: len(data) // 2], offset)
            raise self._refuse(errno.ENOSPC)
        if self.ceiling is not None and offset + len(data) > self.ceiling:
            if offset < self.ceiling:
                return super()._write_at(fd, data[: self.ceiling - offset], offset)
            raise self._refuse(errno.ENOSPC)
        return super()._write_at(fd, data, offset)

    def replace(self, path: str, data: bytes) -> None:
        if self.full:
            raise self._refuse(errno.ENOSPC)
        super().replace(path, data)

    def _check_fsync(self) -> None:
        if self.full:
            raise self._refuse(errno.ENOSPC)
        if self.fsync_errors:
            self.fsync_errors -= 1
            raise self._refuse(errno.EIO)

    def sync(self, path: str) -> None:
        self._check_fsync()
        super().sync(path)

    def sync_detached(self, path: str) -> None:
        self.waiting.set()
        self._gate.wait()
        self.waiting.clear()
        self._check_fsync()
        super().sync_detached(path)

    def hold_fsyncs(self) -> None:
        """Worker-thread fsyncs wait from now on until :meth:`release`."""
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()
