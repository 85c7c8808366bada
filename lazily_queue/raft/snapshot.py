"""Snapshots in CBOR, written and installed by us instead of PySyncObj's pickle dumps.

:class:`SnapshotStore` implements the interface of PySyncObj's internal ``Serializer``
(serialize, deserialize, transmission to followers, install from a leader). It is
synchronous (no fork) except for the encoding and the file write: the state is
captured on the caller's thread (the state machine's capture builds new containers, so
later steps do not change it; the values in them are never changed by the state
machine, and are shared with the callers it returned them to, who must not change them
either), then encoded (:mod:`.snapshot_format`, in short pieces) and written by
:attr:`SnapshotStore.writer` (on a worker thread for the driver, see
:mod:`.snapshot_writer`), and the engine sees SERIALIZING until that write ended: the
journal is compacted only once the file is durable, and a crash mid-write leaves the
previous file. A snapshot received from a peer is decoded once, and its state prepared
(built apart from ours, see :meth:`~.fsm.FSM.prepare`) before it replaces our file; an
invalid one is refused, so the follower never reports a snapshot it could not load, and
loading it installs the prepared state. A snapshot over ``max_bytes`` (default
:data:`MAX_SNAPSHOT_BYTES`) is neither written, read nor assembled from a transmission.
"""

from __future__ import annotations

import errno
import gc
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from .disk import Disk
from .snapshot_format import FORMAT as FORMAT
from .snapshot_format import MAGIC as MAGIC
from .snapshot_format import SnapshotError as SnapshotError
from .snapshot_format import decode_snapshot as decode_snapshot
from .snapshot_format import encode_snapshot as encode_snapshot
from .snapshot_resend import ResendPacer
from .snapshot_writer import Pause, SnapshotWriter

log = logging.getLogger(__name__)


def _not_the_library_report(record: logging.LogRecord) -> bool:
    """PySyncObj warns on every step a snapshot is reported failed (each step while one
    waits for its retry); :class:`SnapshotStore` logs the cause once instead."""
    return record.getMessage() != "Failed to store full dump"


logging.getLogger("pysyncobj.syncobj").addFilter(_not_the_library_report)

NOT_SERIALIZING, SERIALIZING, SUCCESS, FAILED = 0, 1, 2, 3
#: Default largest snapshot (file or transmission); every member must use the same limit.
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
#: Snapshot chunks queued for one member per step, at most (half a link's default send
#: buffer, which also carries the other messages).
SEND_WINDOW_BYTES = 512 * 1024


class SnapshotTooLarge(Exception):
    """A snapshot encoded over the store's limit (not written)."""


def _too_large(size: int, limit: int) -> str:
    return (
        f"snapshot of {size} bytes or more exceeds the {limit}-byte snapshot limit; raise the "
        "limit (the same on every member) or keep less state"
    )


def _without_collections(capture: Callable[[], Any]) -> Any:
    """``capture()`` with the cyclic garbage collector paused: a capture builds a list or
    dict per object and cycles none, and the collections its allocations set off
    traverse what it built so far (100,000 queues captured in 0.18-0.26 s paused, 0.39
    to 0.45 s not, on the event loop, where a stall of 0.3 s costs a leader its
    followers)."""
    if not gc.isenabled():
        return capture()
    gc.disable()
    try:
        return capture()
    finally:
        gc.enable()


def _room(path: str, size: int, error: OSError) -> str:
    """What storing a snapshot of ``size`` bytes at ``path`` needs, and, when ``error``
    says the disk is full (or the quota used), the room there."""
    needs = f"it needs {size:,} bytes"
    if error.errno not in (errno.ENOSPC, errno.EDQUOT):
        return needs
    try:
        fs = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return needs
    free, total = fs.f_bavail * fs.f_frsize, fs.f_blocks * fs.f_frsize
    if size > total:
        return f"{needs}, more than the whole disk of {total:,}: move it to a larger one"
    return f"{needs}, {free:,} of {total:,} are free: make room"


class SnapshotStore:
    """PySyncObj's serializer interface over a :class:`Disk`."""

    def __init__(
        self,
        disk: Disk,
        path: str,
        *,
        capture: Callable[[], Any],
        prepare: Callable[[Any], Any],
        install: Callable[[Any], None],
        chunk_size: int = 48 * 1024,
        max_bytes: int = MAX_SNAPSHOT_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._disk = disk
        self._clock = clock
        #: Seconds between snapshot attempts while the disk refuses them (the driver
        #: sets its ``disk_retry``).
        self.retry_delay = 1.0
        #: After the disk refused a snapshot, none is tried before this time.
        self._retry_at = -float("inf")
        #: Snapshots the disk refused since the last one it took.
        self.disk_failures = 0
        self.path = path
        self._capture = capture
        self._prepare = prepare
        self._install = install
        #: The stored snapshot's anchors and members, and its state prepared, for the
        #: next :meth:`deserialize` (set by a leader's snapshot or :meth:`keep_prepared`).
        self._prepared: tuple[dict[str, Any], Any] | None = None
        self._chunk = chunk_size
        #: Largest snapshot written, read or accepted from a leader.
        self.max_bytes = max_bytes
        self._state = NOT_SERIALIZING
        self._current_id: int | None = None
        self._data: bytes | None = None
        #: Per member a transmission is going to: the snapshot it started with, how many
        #: of its bytes were handed out, and its number (:attr:`_number`). A snapshot
        #: taken meanwhile does not restart it.
        self._sending: dict[Any, tuple[bytes, int, int]] = {}
        #: Counts the snapshots this store held (taken or installed), naming them.
        self._number = 0
        #: Spaces out whole transmissions of one snapshot to one member (it refused it).
        self.resends = ResendPacer(clock, lambda: self.retry_delay)
        #: A transmission is paced so that the links never drop a chunk (a hole makes the
        #: follower refuse the snapshot, and it starts again): a chunk goes to a member
        #: only while fewer than ``window_bytes`` of messages are queued for it in this
        #: step (``queued``, in messages) and its link has room (``link_ready``).
        self.window_bytes = SEND_WINDOW_BYTES
        self.queued: Callable[[Any], int] = lambda node: 0
        self.link_ready: Callable[[Any], bool] = lambda node: True
        self._incoming: bytearray | None = None
        self.installed = 0
        self.taken = 0
        #: The last snapshot from a leader could not be written to disk, and why.
        self.write_failed = False
        self.write_error: str | None = None
        #: Turns a stored member id into the engine's node object.
        self.member_factory: Callable[[str], Any] = str
        #: Whether a received snapshot ending at this entry is older than what the member
        #: holds (such a snapshot is refused, and counted in :attr:`refused_stale`).
        self.is_stale: Callable[[tuple[bytes, int, int]], bool] = lambda last: False
        self.refused_stale = 0
        #: Snapshots that failed for another reason than the disk (the state could not
        #: be captured or encoded): a defect, the log then grows until one succeeds.
        self.capture_failures = 0
        #: Writes the snapshot files this member takes.
        self.writer = SnapshotWriter(lambda raw: self._disk.replace(self.path, raw))

    def __fspath__(self) -> str:
        return self.path

    # -- taking a snapshot --------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        """A snapshot is being written (or its end not yet reported)."""
        return self.writer.pending

    def checkSerializing(self) -> tuple[int, int | None]:
        state = self._state
        if state == SERIALIZING:
            if not self.writer.poll():
                return SERIALIZING, self._current_id
            self._written()
            state = self._state
        if state in (SUCCESS, FAILED):
            self._state = NOT_SERIALIZING
            return state, self._current_id
        return NOT_SERIALIZING, None

    def serialize(self, data: Any, id: int) -> None:
        if self.writer.pending:  # the engine waits for SERIALIZING to end first
            return
        _, last, prev, members = data
        self._current_id = id
        if self._clock() < self._retry_at:  # the disk refused the last one: wait
            self._state = FAILED
            return
        try:
            doc = {
                "format": FORMAT,
                "state": _without_collections(self._capture),
                "last": list(last),
                "prev": list(prev),
                "members": sorted(str(getattr(m, "id", m)) for m in members),
            }
        except Exception:
            log.exception("taking a snapshot failed; the log is kept")
            self.capture_failures += 1
            self._state = FAILED
            return
        limit = self.max_bytes

        def encode(pause: Pause | None) -> bytes:  # where the writer writes
            raw = encode_snapshot(doc, pause)
            if len(raw) > limit:
                raise SnapshotTooLarge(_too_large(len(raw), limit))
            return raw

        self.writer.start(encode)
        self._state = SERIALIZING

    def _written(self) -> None:
        """Conclude the ended write: SUCCESS (the file is durable) or FAILED."""
        raw, exc = self.writer.take()
        if isinstance(exc, OSError):
            if not self.disk_failures:
                log.error("taking a snapshot failed; the log is kept and a snapshot is tried "
                          "again every %g s: %s", self.retry_delay, exc)
            self.disk_failures += 1
            self._retry_at = self._clock() + self.retry_delay
            self._state = FAILED
            return
        if isinstance(exc, SnapshotTooLarge):
            log.error("taking a snapshot failed; the log is kept: %s", exc)
            self._state = FAILED
            return
        if exc is not None:
            log.error("taking a snapshot failed; the log is kept: %s: %s",
                      type(exc).__name__, exc)
            self.capture_failures += 1
            self._state = FAILED
            return
        self._data = raw
        self._number += 1
        self._state = SUCCESS
        self.taken += 1
        if self.disk_failures:
            log.warning("a snapshot was taken again after %d attempts the disk refused",
                        self.disk_failures)
            self.disk_failures = 0

    def wait(self) -> None:
        """Block until the snapshot being written (if any) is on disk or failed; its
        outcome is reported by the next :meth:`checkSerializing`."""
        if self.writer.pending:
            self._written()

    def close(self) -> None:
        """Wait for the write in progress and stop the writer's thread."""
        self.wait()
        self.writer.close()

    @property
    def size(self) -> int:
        """The bytes of the snapshot taken or installed last (0 before there is one)."""
        return len(self._data or b"")

    def _raw(self) -> bytes | None:
        """The stored snapshot's bytes (read from disk once, then kept)."""
        if self._data is None:
            self._data = self._disk.read(self.path)
        return self._data

    @property
    def stored(self) -> bool:
        """A snapshot is stored (its file read once, not decoded)."""
        return self._raw() is not None

    def read(self) -> dict[str, Any] | None:
        """The stored snapshot, decoded (each call anew), or ``None`` when there is none."""
        raw = self._raw()
        if raw is None:
            return None
        if len(raw) > self.max_bytes:
            raise SnapshotError(f"{self.path}: {_too_large(len(raw), self.max_bytes)}")
        return decode_snapshot(raw)

    def keep_prepared(self, doc: dict[str, Any], prepared: Any) -> None:
        """Have the next :meth:`deserialize` install ``prepared``, the state of the stored
        snapshot ``doc`` (:meth:`read`'s) that the caller prepared, rather than decode and
        prepare it again."""
        self._prepared = ({k: v for k, v in doc.items() if k != "state"}, prepared)

    def deserialize(self) -> tuple[None, tuple[bytes, int, int], tuple[bytes, int, int], list[Any]]:
        kept, self._prepared = self._prepared, None
        if kept is None:
            doc = self.read()
            if doc is None:
                raise SnapshotError(f"{self.path}: no snapshot to load")
            kept = (doc, self._prepare(doc.pop("state")))
        doc, prepared = kept
        del kept
        self._install(prepared)
        members = [self.member_factory(m) for m in doc["members"]]
        return None, doc["last"], doc["prev"], members

    # -- sending to a follower ------------------------------------------------------------------

    @property
    def transmitting(self) -> bool:
        """A transmission to some member has started and not ended."""
        return bool(self._sending)

    def getTransmissionData(self, transmissionID: Any) -> tuple[bytes, bool, bool] | None:
        """The next chunk for ``transmissionID``, or ``None`` (nothing is sent to it this
        round) when there is no snapshot or the member's window or link is full."""
        if (self.queued(transmissionID) * self._chunk >= self.window_bytes
                or not self.link_ready(transmissionID)):
            return None
        started = self._sending.get(transmissionID)
        if started is None:
            data = self._raw()
            number = self._number
            if data is None or self.resends.waits(transmissionID, number):
                return None
            sent = 0
        else:
            data, sent, number = started
        chunk = data[sent : sent + self._chunk]
        is_last = not chunk
        if is_last:
            self._sending.pop(transmissionID, None)
            self.resends.sent(transmissionID, number)
        else:
            self._sending[transmissionID] = (data, sent + len(chunk), number)
        return chunk, sent == 0, is_last

    def cancelTransmisstion(self, transmissionID: Any) -> None:
        self._sending.pop(transmissionID, None)

    # -- installing from a leader ---------------------------------------------------------------

    def setTransmissionData(self, data: Any) -> bool:
        if data is None:
            return False
        try:
            chunk, is_first, is_last = data
        except (TypeError, ValueError):
            log.warning("dropped a malformed snapshot chunk")
            self._incoming = None
            return False
        if not isinstance(chunk, bytes):
            self._incoming = None
            return False
        if is_first:
            self._incoming = bytearray()
        elif self._incoming is None:
            return False
        if len(self._incoming) + len(chunk) > self.max_bytes:
            log.error("refused a snapshot from the leader: %s",
                      _too_large(len(self._incoming) + len(chunk), self.max_bytes))
            self._incoming = None
            return False
        self._incoming += chunk
        if not is_last:
            return False
        raw, self._incoming = bytes(self._incoming), None
        try:
            doc = decode_snapshot(raw)
            if self.is_stale(doc["last"]):
                log.info("ignored a snapshot from the leader ending at entry %d: this member "
                         "already holds it", doc["last"][1])
                self.refused_stale += 1
                return False
            prepared = self._prepare(doc.pop("state"))  # the decoded state goes with it
        except Exception as exc:
            log.error("refused a snapshot from the leader: %s", exc)
            return False
        self.wait()  # our own snapshot, still being written, would land over the leader's
        try:
            self._disk.replace(self.path, raw)
        except OSError as exc:
            # The leader sends it again; until the disk takes it the follower stays behind.
            error = f"{self.path}: {exc.strerror or exc} ({_room(self.path, len(raw), exc)})"
            if not self.write_failed:
                log.error("could not store the snapshot from the leader at %s; it is "
                          "refused until the disk accepts it, and the leader sends it "
                          "again less and less often (at most every %g s)", error,
                          self.resends.cap)
            self.write_failed = True
            self.write_error = error
            return False
        if self.write_failed:
            log.warning("stored the snapshot from the leader at %s again", self.path)
            self.write_failed = False
            self.write_error = None
        self._data = raw
        self._number += 1
        self._prepared = (doc, prepared)
        self.installed += 1
        return True
