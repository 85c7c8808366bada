"""A simulated :class:`~lazily_queue.raft.disk.Disk` that loses unsynced writes on a crash.

Each file keeps its durable bytes (what survives a crash) and its current bytes (what
reads see). ``sync`` makes the current bytes durable; ``replace`` and ``remove`` are
atomic and durable. :meth:`SimDisk.crash` resets every file to its durable bytes,
except that an append not yet synced may survive in part (a torn record), decided
by the simulator's random generator. Faults can flip a bit of the durable bytes of
a file or remove a range of them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class _File:
    durable: bytes = b""
    current: bytearray = field(default_factory=bytearray)


class SimDisk:
    """In-memory files with durable and volatile parts; one per simulated node."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self.fsyncs = 0

    # -- the Disk protocol ---------------------------------------------------------------

    def read(self, path: str) -> bytes | None:
        f = self._files.get(path)
        return None if f is None else bytes(f.current)

    def append(self, path: str, data: bytes) -> None:
        self._files.setdefault(path, _File()).current += data

    def truncate(self, path: str, size: int) -> None:
        f = self._files.setdefault(path, _File())
        del f.current[size:]

    def sync(self, path: str) -> None:
        f = self._files.get(path)
        if f is not None:
            f.durable = bytes(f.current)
            self.fsyncs += 1

    def sync_detached(self, path: str) -> None:
        self.sync(path)

    def replace(self, path: str, data: bytes) -> None:
        self._files[path] = _File(bytes(data), bytearray(data))

    def remove(self, path: str) -> None:
        self._files.pop(path, None)

    def makedirs(self, path: str) -> None:
        return None

    # -- faults --------------------------------------------------------------------------

    def crash(self, rng: random.Random) -> int:
        """Lose what was not synced; an unsynced append may survive torn. Returns bytes kept."""
        kept = 0
        for f in self._files.values():
            extra = len(f.current) - len(f.durable)
            survive = 0
            if extra > 0 and bytes(f.current[: len(f.durable)]) == f.durable:
                # The unsynced tail may have reached the platters in part.
                if rng.random() < 0.5:
                    survive = rng.randrange(extra + 1)
            f.current = bytearray(f.current[: len(f.durable) + survive])
            if survive == 0:
                f.current = bytearray(f.durable)
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
