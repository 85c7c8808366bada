"""The file operations the journal and snapshot store need, behind one small interface.

:class:`OsDisk` is the real file system. A simulator supplies a disk that loses every
write not yet made durable when a node crashes. ``sync=False`` (durability mode
``none``) skips every fsync.

A file that grows by :meth:`Disk.append` (the journal) is preallocated: its end is
filled with zeros ``preallocate`` bytes at a time and that growth is made durable (file
and directory) at once, so appends overwrite blocks the file already owns and
:meth:`Disk.sync` is an ``fdatasync`` that flushes no metadata. A full disk therefore
refuses the growth, before any record is written; when less than ``preallocate`` bytes
are left, the file grows by what the records need (rounded up to a page), so a nearly
full disk still takes them. Readers see the zeros after the last record; the journal's
records are framed so that zeros end the log.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Protocol

#: Bytes of zeros a growing file is extended by at a time.
PREALLOCATE = 1 << 20
#: What a growth is rounded up to when a whole :data:`PREALLOCATE` does not fit.
_PAGE = 4096
_ZEROS = bytes(64 * 1024)


class Disk(Protocol):
    """Whole-file reads, appends, truncation, durable sync and atomic replacement."""

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or ``None`` when it does not exist."""
        ...

    def append(self, path: str, data: bytes) -> None:
        """Write ``data`` after the content (may have written part of it when it raises)."""
        ...

    def truncate(self, path: str, size: int) -> None:
        """The content ends at ``size``; what followed reads as zeros or is gone."""
        ...

    def sync(self, path: str) -> None:
        """Make everything written to ``path`` durable."""
        ...

    def sync_detached(self, path: str) -> None:
        """Like :meth:`sync`, callable from another thread while writes go on."""
        ...

    def prepare_sync(self, path: str) -> None:
        """On the writing thread: make ready now what the next :meth:`sync_detached` of
        ``path`` needs, so it covers ``path`` as it is now and starts with its fsync."""
        ...

    def replace(self, path: str, data: bytes) -> None:
        """Atomically and durably make ``data`` the content of ``path``."""
        ...

    def remove(self, path: str) -> None: ...

    def makedirs(self, path: str) -> None: ...


class _Open:
    """A file written through :meth:`OsDisk.append`: its descriptor, where the content
    ends and how far the file is allocated (zeros from ``end`` to ``allocated``)."""

    __slots__ = ("allocated", "end", "fd")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.end = size
        self.allocated = size


class OsDisk:
    """The real file system; keeps one descriptor per appended file, preallocated
    ``preallocate`` bytes at a time (see the module docstring)."""

    def __init__(self, *, sync: bool = True, preallocate: int = PREALLOCATE) -> None:
        self.fsync_enabled = sync
        self.preallocate = max(1, preallocate)
        self._files: dict[str, _Open] = {}
        self.fsyncs = 0
        #: Times an appended file was extended with zeros.
        self.growths = 0
        #: Descriptors opened by :meth:`prepare_sync` for the next detached sync.
        self._prepared: dict[str, int] = {}

    def _open(self, path: str) -> _Open:
        f = self._files.get(path)
        if f is None:
            created = not os.path.exists(path)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            f = self._files[path] = _Open(fd, os.fstat(fd).st_size)
            if created:
                self._sync_dir(os.path.dirname(path) or ".")
        return f

    def _write_at(self, fd: int, data: bytes | memoryview, offset: int) -> int:
        """One ``pwrite`` (the seam tests use to make writes fail)."""
        return os.pwrite(fd, data, offset)

    def read(self, path: str) -> bytes | None:
        try:  # no wait for a writer, should the path be a FIFO
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            raise OSError(errno.EINVAL, "Not a regular file", path)
        with open(fd, "rb") as f:
            try:
                return f.read()
            except MemoryError:
                size = os.fstat(f.fileno()).st_size
                raise OSError(errno.ENOMEM, f"{size:,} bytes do not fit in memory; a file "
                              "this large is not one the node wrote", path) from None

    def append(self, path: str, data: bytes) -> None:
        f = self._files.get(path) or self._open(path)
        need = f.end + len(data)
        if need > f.allocated:
            whole = need + self.preallocate - need % self.preallocate
            fit = -(-need // _PAGE) * _PAGE
            try:
                self._grow(f, whole)
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or fit >= whole:
                    raise
                self._grow(f, fit)  # the disk's last bytes: what the records need
        view = memoryview(data)
        while view:
            written = self._write_at(f.fd, view, f.end)
            view = view[written:]
            f.end += written

    def _grow(self, f: _Open, size: int) -> None:
        """Fill the file with zeros up to ``size`` and make that durable; on failure the
        file is cut back to what it was and the error raised."""
        old = f.allocated
        try:
            pos = old
            while pos < size:
                chunk = memoryview(_ZEROS)[: min(len(_ZEROS), size - pos)]
                pos += self._write_at(f.fd, chunk, pos)
            if self.fsync_enabled:
                os.fsync(f.fd)
                self.fsyncs += 1
        except OSError:
            try:
                os.ftruncate(f.fd, old)
            except OSError:
                pass
            raise
        f.allocated = size
        self.growths += 1

    def truncate(self, path: str, size: int) -> None:
        f = self._files.get(path)
        if f is None:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.ftruncate(fd, size)
                if self.fsync_enabled:
                    os.fsync(fd)
                    self.fsyncs += 1
            finally:
                os.close(fd)
            return
        if size < f.end:
            # Keep the blocks: overwrite the cut content with zeros, durably, so no
            # stale record can reappear after a later, shorter one.
            pos = size
            while pos < f.end:  # blocks the file owns: needs no space
                chunk = memoryview(_ZEROS)[: min(len(_ZEROS), f.end - pos)]
                pos += os.pwrite(f.fd, chunk, pos)
            if self.fsync_enabled:
                os.fdatasync(f.fd)
                self.fsyncs += 1
        f.end = min(size, f.end)

    def sync(self, path: str) -> None:
        if self.fsync_enabled:
            f = self._files.get(path)
            os.fdatasync((f or self._open(path)).fd)
            self.fsyncs += 1

    def prepare_sync(self, path: str) -> None:
        """Open the descriptor the next :meth:`sync_detached` of ``path`` uses: opening it
        there would hand the interpreter lock back before its fsync starts. When it
        cannot be opened here, that sync opens it (and raises why it cannot)."""
        if not self.fsync_enabled:
            return
        self._drop_prepared(path)
        with contextlib.suppress(OSError):
            self._prepared[path] = os.open(path, os.O_RDONLY)

    def _drop_prepared(self, path: str) -> None:
        fd = self._prepared.pop(path, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def sync_detached(self, path: str) -> None:
        if not self.fsync_enabled:
            return
        fd = self._prepared.pop(path, None)
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                return
        try:
            # Growth is made durable when it happens: only data remains to flush.
            os.fdatasync(fd)
            self.fsyncs += 1
        finally:
            os.close(fd)

    def replace(self, path: str, data: bytes) -> None:
        self.close(path)
        tmp = f"{path}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if self.fsync_enabled:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            with contextlib.suppress(OSError):  # a partial copy would hold the space
                os.remove(tmp)
            raise
        os.replace(tmp, path)
        self._sync_dir(os.path.dirname(path) or ".")

    def _sync_dir(self, directory: str) -> None:
        if not self.fsync_enabled:
            return
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
            self.fsyncs += 1
        finally:
            os.close(fd)

    def remove(self, path: str) -> None:
        self.close(path)
        try:
            os.remove(path)
        except FileNotFoundError:
            return
        self._sync_dir(os.path.dirname(path) or ".")

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def close(self, path: str | None = None) -> None:
        """Close the descriptor of ``path`` (every descriptor when ``None``)."""
        paths = list(self._files) if path is None else [path]
        for p in list(self._prepared) if path is None else [path]:
            self._drop_prepared(p)
        for p in paths:
            f = self._files.pop(p, None)
            if f is not None:
                os.close(f.fd)
