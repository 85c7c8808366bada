"""The file operations the journal and snapshot store need, behind one small interface.

:class:`OsDisk` is the real file system. A simulator supplies a disk that loses every
write not yet made durable when a node crashes. ``sync=False`` (durability mode
``none``) skips every fsync.
"""

from __future__ import annotations

import os
from typing import Protocol


class Disk(Protocol):
    """Whole-file reads, appends, truncation, durable sync and atomic replacement."""

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or ``None`` when it does not exist."""
        ...

    def append(self, path: str, data: bytes) -> None: ...

    def truncate(self, path: str, size: int) -> None: ...

    def sync(self, path: str) -> None:
        """Make everything written to ``path`` durable."""
        ...

    def sync_detached(self, path: str) -> None:
        """Like :meth:`sync`, callable from another thread while writes go on."""
        ...

    def replace(self, path: str, data: bytes) -> None:
        """Atomically and durably make ``data`` the content of ``path``."""
        ...

    def remove(self, path: str) -> None: ...

    def makedirs(self, path: str) -> None: ...


class OsDisk:
    """The real file system; keeps one append descriptor per file."""

    def __init__(self, *, sync: bool = True) -> None:
        self.fsync_enabled = sync
        self._fds: dict[str, int] = {}
        self.fsyncs = 0

    def _fd(self, path: str) -> int:
        fd = self._fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._fds[path] = fd
        return fd

    def read(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def append(self, path: str, data: bytes) -> None:
        fd = self._fd(path)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def truncate(self, path: str, size: int) -> None:
        os.truncate(path, size)

    def sync(self, path: str) -> None:
        if self.fsync_enabled:
            os.fsync(self._fd(path))
            self.fsyncs += 1

    def sync_detached(self, path: str) -> None:
        if not self.fsync_enabled:
            return
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
            self.fsyncs += 1
        finally:
            os.close(fd)

    def replace(self, path: str, data: bytes) -> None:
        self.close(path)
        tmp = f"{path}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if self.fsync_enabled:
                os.fsync(fd)
        finally:
            os.close(fd)
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
        """Close the append descriptor of ``path`` (every descriptor when ``None``)."""
        paths = list(self._fds) if path is None else [path]
        for p in paths:
            fd = self._fds.pop(p, None)
            if fd is not None:
                os.close(fd)
